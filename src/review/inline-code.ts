/** A piece of the report's prose (a summary, a hint, a message): plain words, or a code span the text marked with backticks. */
export interface InlinePiece {
  readonly kind: "text" | "code";
  readonly text: string;
}

/**
 * The report's texts mark commands and paths as markdown does (``"`npm test` failed"``): `text` cut into plain runs and
 * code spans. A run of backticks opens a span that the next run of the same length closes (CommonMark's rule, so a
 * span can hold a shorter run); a run nothing closes is plain text.
 */
export function inlinePieces(text: string): InlinePiece[] {
  const pieces: InlinePiece[] = [];
  let plain = "";
  let at = 0;
  while (at < text.length) {
    const open = text.indexOf("`", at);
    if (open === -1) {
      plain += text.slice(at);
      break;
    }
    const ticks = runLength(text, open);
    const close = closingRun(text, open + ticks, ticks);
    if (close === -1) {
      plain += text.slice(at, open + ticks);
      at = open + ticks;
      continue;
    }
    plain += text.slice(at, open);
    if (plain !== "") pieces.push({ kind: "text", text: plain });
    plain = "";
    pieces.push({ kind: "code", text: spanContent(text.slice(open + ticks, close)) });
    at = close + ticks;
  }
  if (plain !== "") pieces.push({ kind: "text", text: plain });
  return pieces;
}

/** The text with its code spans' backticks taken out: what a reader sees once the spans are rendered. */
export function withoutCodeMarks(text: string): string {
  return inlinePieces(text)
    .map((piece) => piece.text)
    .join("");
}

function runLength(text: string, at: number): number {
  let end = at;
  while (text[end] === "`") end++;
  return end - at;
}

/** Where the next run of exactly `ticks` backticks starts, from `from`; -1 when there is none. */
function closingRun(text: string, from: number, ticks: number): number {
  let at = text.indexOf("`", from);
  while (at !== -1) {
    const length = runLength(text, at);
    if (length === ticks) return at;
    at = text.indexOf("`", at + length);
  }
  return -1;
}

/** CommonMark strips one space on each side of a span that has both and is not only spaces (``` `` `a` `` ```). */
function spanContent(inner: string): string {
  return inner.length >= 2 && inner.startsWith(" ") && inner.endsWith(" ") && inner.trim() !== "" ? inner.slice(1, -1) : inner;
}
