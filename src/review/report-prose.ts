import { codeSpan, markdownText } from "../lib/markdown-fence.js";
import { type Html, html } from "./html/escape.js";
import { inlinePieces } from "./inline-code.js";

/**
 * The run's own texts (summary, hint, findings' messages, an attempt's summary) as each report shows them. They mark
 * code with backticks and point at the run's files ("see test.log", "(see agent.tool.finished in events.jsonl)", "see
 * docs/containment.md"). The HTML page renders the spans as code and links each run file, relative to the run
 * directory; the markdown a pull request shows keeps the spans, sends "see test.log" to its own Verification section
 * and drops every other pointer, which a reader of the PR cannot open. The text report shows them as written.
 */

/** A file of the run directory, as the texts name it: `test.log`, `attempts/1/feedback.md`, `candidates/2/result.json`. */
const RUN_FILE_NAME =
  "(?:(?:attempts|candidates)/\\d+/)?(?:test\\.log|events\\.jsonl|result\\.json|backend-result\\.json|changes\\.patch|request\\.json|candidates\\.json|feedback\\.md)";
const RUN_FILE = new RegExp(`(?<![\\w./-])${RUN_FILE_NAME}(?![\\w-])`, "gu");
const WHOLE_RUN_FILE = new RegExp(`^${RUN_FILE_NAME}$`, "u");
/** A run file other than test.log, which the markdown report shows the failing part of. */
const OTHER_RUN_FILE = `(?<![\\w./-])(?!test\\.log)${RUN_FILE_NAME}(?![\\w-])`;

/** Files of the run that live with its own results: a candidates run's are its winner's, in `candidates/<k>/`. */
const OWN_FILES = new Set(["test.log", "backend-result.json", "request.json"]);

/** Where the run's own files are, relative to the run directory (ownFilesPrefix: "" or `candidates/<k>/`). */
export interface RunFileLinks {
  readonly ownFilesPrefix: string;
}

function runFileHref(name: string, links: RunFileLinks): string {
  return OWN_FILES.has(name) ? `${links.ownFilesPrefix}${name}` : name;
}

/** `text` for the HTML page: code spans as `<code>`, every run file named a link to it, everything else escaped. */
export function proseHtml(text: string, links: RunFileLinks): Html {
  return html`${inlinePieces(text).map((piece) => {
    if (piece.kind === "code")
      return WHOLE_RUN_FILE.test(piece.text)
        ? html`<a href="${runFileHref(piece.text, links)}"><code>${piece.text}</code></a>`
        : html`<code>${piece.text}</code>`;
    return linkedFiles(piece.text, links);
  })}`;
}

function linkedFiles(text: string, links: RunFileLinks): Html {
  const out: (Html | string)[] = [];
  let at = 0;
  for (const match of text.matchAll(RUN_FILE)) {
    out.push(text.slice(at, match.index));
    out.push(html`<a href="${runFileHref(match[0], links)}">${match[0]}</a>`);
    at = match.index + match[0].length;
  }
  out.push(text.slice(at));
  return html`${out}`;
}

/** Pointers a PR reader cannot follow: a parenthesis naming a run file, a "see" clause naming one, a "see docs/…". */
const DROPPED: readonly RegExp[] = [
  new RegExp(`\\s*\\([^()]*${OTHER_RUN_FILE}[^()]*\\)`, "gu"),
  new RegExp(`[;:,]?\\s*\\bsee\\s[^;()]*?${OTHER_RUN_FILE}[^;()]*`, "gu"),
  /[;:,]?\s*\bsee docs\/[\w./#-]+/gu,
];

const VERIFICATION_LINK = "[Verification](#verification)";

/**
 * `text` for the markdown report: its pointers to other run files dropped, "see test.log" sent to the report's
 * Verification section, code spans kept valid, the rest escaped. Empty when nothing but pointers was left.
 */
export function proseMarkdown(text: string): string {
  const kept = DROPPED.reduce((rest, pattern) => rest.replace(pattern, ""), text)
    .replace(/^[\s;:,]+/u, "")
    .replace(/ {2,}/gu, " ")
    .trim();
  return inlinePieces(kept)
    .map((piece) => (piece.kind === "code" ? codeSpan(piece.text) : testLogPointers(piece.text)))
    .join("");
}

/** Plain words escaped, "see test.log" and "output in test.log" pointing at the Verification section, which shows it. */
function testLogPointers(text: string): string {
  const out: string[] = [];
  let at = 0;
  for (const match of text.matchAll(/\b(see|output in) test\.log(?![\w-])/gu)) {
    out.push(markdownText(text.slice(at, match.index)));
    out.push(match[1] === "see" ? `see the output under ${VERIFICATION_LINK}` : `output under ${VERIFICATION_LINK}`);
    at = match.index + match[0].length;
  }
  out.push(markdownText(text.slice(at)));
  return out.join("");
}
