import { markdownText } from "../lib/markdown-fence.js";
import { escapeControls } from "../vocabulary/display.js";
import type { CandidateEntry, RunResult } from "../verdict/result.js";
import { ms } from "./format.js";
import { winnerReason } from "../many/winner.js";

/**
 * `handoff show` of a candidates run: the candidates side by side (k, backend, verdict, warnings, patch size, time,
 * cost, agreement), the winner marked `*`, then why it won and which candidates agree. Cells of plain text: a table in
 * markdown, aligned columns in text, and a `<table>` in the HTML page (html-report.ts).
 */
export interface CandidatesTable {
  readonly header: readonly string[];
  readonly rows: readonly (readonly string[])[];
  /** Whether each row is the winner's. */
  readonly winners: readonly boolean[];
  /** Why the winner won (or that none did), and each group of candidates that wrote the same patch. */
  readonly notes: readonly string[];
}

export function candidatesTableCells(result: RunResult): CandidatesTable {
  const candidates = result.candidates ?? [];
  return {
    header: ["k", "backend", "verdict", "warnings", "patch", "time", "cost", "agrees with"],
    rows: candidates.map((candidate) => row(candidate, candidate.k === result.winner)),
    winners: candidates.map((candidate) => candidate.k === result.winner),
    notes: [
      result.winner === null || result.winner === undefined
        ? "no winner"
        : `winner: candidate ${result.winner} (*): ${winnerReason(candidates, result.winner)}`,
      ...(result.agreement ?? []).map((group) => `agreement: candidates ${group.join(", ")} wrote the same patch`),
    ],
  };
}

export function candidatesTable(result: RunResult, as: "markdown" | "text"): string[] {
  const { header, rows, notes } = candidatesTableCells(result);
  if (as === "markdown") {
    // Each cell escaped (a backend named `a|b`, the winner's `*`); the notes a list, each on its own line as rendered.
    const line = (cells: readonly string[]) => `| ${cells.map((cell) => markdownText(cell)).join(" | ")} |`;
    return [line(header), line(header.map(() => "---")), ...rows.map(line), "", ...notes.map((note) => `- ${markdownText(note)}`)];
  }
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((cells) => cells[column]!.length)));
  const line = (cells: readonly string[]) =>
    `  ${cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join("  ")
      .trimEnd()}`;
  return [line(header), ...rows.map(line), ...notes.map((text) => `  ${text}`)];
}

function row(candidate: CandidateEntry, winner: boolean): string[] {
  return [
    `${winner ? "*" : ""}${candidate.k}`,
    escapeControls(candidate.backend),
    candidate.terminalReason,
    String(candidate.warnings),
    candidate.patchSha256 === null || candidate.patchBytes === 0 ? "-" : `${candidate.patchBytes} B`,
    ms(candidate.durationMs),
    candidate.costUsd === null ? "-" : `$${candidate.costUsd}`,
    candidate.agreesWith.length > 0 ? candidate.agreesWith.join(", ") : "-",
  ];
}
