import { parsePatch } from "../patch/patch.js";
import { escapeControls } from "../vocabulary/display.js";
import { diffLinesOf, isCrlfDiff } from "./line-endings.js";

/** One file's part of changes.patch, as the reports list and show it. */
export interface FileDiff {
  /** As the `diff --git` header names it (git's quoting kept), escaped for display. */
  readonly path: string;
  readonly change: "added" | "modified" | "deleted";
  readonly binary: boolean;
  readonly additions: number;
  readonly deletions: number;
  readonly hunks: number;
  /** Every diff line of it ends in CR: a CRLF file whose line endings the patch kept (line-endings.ts). */
  readonly crlf: boolean;
  /** The section's text, from its `diff --git` line to the next one. */
  readonly text: string;
}

const HEADER = "diff --git ";

/**
 * changes.patch cut into its files: each `diff --git` section with the counts parsePatch read. A hunk line starts with
 * `+`, `-`, ` ` or `\`, so a line that starts `diff --git ` is always a header.
 */
export function fileDiffs(patch: Buffer): FileDiff[] {
  const parsed = parsePatch(patch);
  const text = patch.toString("utf8");
  const starts: number[] = [];
  const nextHeader = (from: number) => {
    const found = text.indexOf(`\n${HEADER}`, from);
    return found < 0 ? -1 : found + 1;
  };
  for (let at = text.startsWith(HEADER) ? 0 : nextHeader(0); at >= 0; at = nextHeader(at)) starts.push(at);
  if (starts.length !== parsed.files.length) return [];
  return parsed.files.map((file, i) => {
    const section = text.slice(starts[i], starts[i + 1] ?? text.length);
    return {
      path: escapeControls(file.path),
      change: file.change,
      binary: file.binary,
      additions: file.additions,
      deletions: file.deletions,
      hunks: file.hunks.length,
      crlf: !file.binary && isCrlfDiff(diffLinesOf(section)),
      text: section,
    };
  });
}
