/** The backticks of a markdown code fence for `text`: longer than any run of backticks in it (at least three), so the text cannot close the fence early. */
export function fenceFor(text: string): string {
  return "`".repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((run) => run[0].length + 1)));
}
