/**
 * Whether a file's diff lines are all CRLF lines (a CRLF file whose line endings the patch leaves as they were).
 * The reports then show it without the CRs and say so once; otherwise each CR stays visible (`\x0d`), since the line
 * endings are then part of the change. `lines` are the diff lines (context, added, removed) of one file, each paired
 * with whether a `\ No newline at end of file` note follows it: such a last line has no line ending to compare.
 */
export function isCrlfDiff(lines: readonly { readonly text: string; readonly lastOfFile: boolean }[]): boolean {
  return lines.some((line) => !line.lastOfFile) && lines.every((line) => line.lastOfFile || line.text.endsWith("\r"));
}

/** The diff lines of one file's section of a patch: after its first `@@`, the lines that start with ` `, `+` or `-`. */
export function diffLinesOf(section: string): { text: string; lastOfFile: boolean }[] {
  const lines = section.split("\n");
  const first = lines.findIndex((line) => line.startsWith("@@"));
  if (first < 0) return [];
  const out: { text: string; lastOfFile: boolean }[] = [];
  for (let i = first + 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith(" ") || line.startsWith("+") || line.startsWith("-"))
      out.push({ text: line, lastOfFile: lines[i + 1]?.startsWith("\\") ?? false });
  }
  return out;
}
