import { escapeControls } from "../vocabulary/display.js";
import type { CandidateEntry, RunResult } from "../verdict/result.js";
import { ms } from "./format.js";
import { winnerReason } from "../many/winner.js";

/**
 * `handoff show` of a candidates run: the candidates side by side (k, backend, verdict, warnings, patch size, time,
 * cost, agreement), the winner marked `*`. A table in markdown, aligned columns in text.
 */
export function candidatesTable(result: RunResult, as: "markdown" | "text"): string[] {
  const candidates = result.candidates ?? [];
  const header = ["k", "backend", "verdict", "warnings", "patch", "time", "cost", "agrees with"];
  const rows = candidates.map((candidate) => row(candidate, candidate.k === result.winner));
  const footer = [
    result.winner === null || result.winner === undefined
      ? "no winner"
      : `winner: candidate ${result.winner} (*): ${winnerReason(candidates, result.winner)}`,
    ...(result.agreement ?? []).map((group) => `agreement: candidates ${group.join(", ")} wrote the same patch`),
  ];
  if (as === "markdown") {
    const line = (cells: readonly string[]) => `| ${cells.map((cell) => cell.replaceAll("|", "\\|")).join(" | ")} |`;
    return [line(header), line(header.map(() => "---")), ...rows.map(line), "", ...footer];
  }
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((cells) => cells[column]!.length)));
  const line = (cells: readonly string[]) =>
    `  ${cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join("  ")
      .trimEnd()}`;
  return [line(header), ...rows.map(line), ...footer.map((text) => `  ${text}`)];
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
