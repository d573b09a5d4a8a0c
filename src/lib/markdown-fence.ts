/** The backticks of a markdown code fence for `text`: longer than any run of backticks in it (at least three), so the text cannot close the fence early. */
export function fenceFor(text: string): string {
  return "`".repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((run) => run[0].length + 1)));
}

/** `text` as inline markdown code: delimited by a backtick run longer than any inside it, so it cannot end early. */
export function codeSpan(text: string): string {
  const ticks = "`".repeat(Math.max(1, ...[...text.matchAll(/`+/g)].map((run) => run[0].length + 1)));
  // A space on each side keeps a leading or trailing backtick from joining the delimiter (CommonMark strips one).
  const pad = text.startsWith("`") || text.endsWith("`") || text === "" ? " " : "";
  return `${ticks}${pad}${text.replace(/\n/g, " ")}${pad}${ticks}`;
}

/** Plain text for a markdown line: markup characters escaped, so a message cannot open a link, HTML or emphasis. */
export function markdownText(text: string): string {
  return text
    .replace(/\n/g, " ")
    .replace(/[\\`*_[\]<>|~#!&]/g, (ch) => (ch === "&" ? "&amp;" : ch === "<" ? "&lt;" : ch === ">" ? "&gt;" : `\\${ch}`));
}

const ENTITIES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text for an HTML element's content or attribute (`<summary>`, the HTML report): no markup, no entity, no quote can end it. */
export function htmlText(text: string): string {
  return text.replace(/[&<>"']/gu, (ch) => ENTITIES[ch] ?? ch);
}
