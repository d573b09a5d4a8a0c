import { z } from "zod";
import { RUNNERS, type RunnerName, type RunnerSummary, notRunCount, ranCount } from "./runner-summary.js";
import type { CommandRecord } from "./shell-commands.js";

/**
 * Evidence from the runners' own summaries (docs/verification.md, "Runner summaries"), for runs without `--junit`:
 * each verify command's summaries on the base (`--baseline`), held to the base and as patched, compared by the
 * command's position in the verify list. A side that ran fewer tests, skipped more, or printed no summary where the
 * side it is compared with printed one is a finding.
 */

/** Where a command ran: the untouched base, the run held to the base, the run as patched. */
export type SummarySide = "base" | "held" | "patched";

/** The pairs compared, the side whose tests must not shrink first: the base with both runs, the held run with the patched. */
const PAIRS: readonly { readonly reference: "base" | "held"; readonly side: "held" | "patched" }[] = [
  { reference: "base", side: "patched" },
  { reference: "base", side: "held" },
  { reference: "held", side: "patched" },
];

/** A command's run on one side, as far as the comparison needs it. */
type SideRun = Pick<CommandRecord, "exitCode" | "durationMs" | "summaries">;

export type SummaryFinding = ComparisonFinding | ExitFinding;

/** A runner's summary counts failed tests, yet the command exited 0: something between the runner and the exit code lies. */
export type ExitFinding = {
  readonly command: string;
  readonly kind: "failed_but_exit_0";
  readonly side: "held" | "patched";
  readonly runner: RunnerName;
  readonly after: RunnerSummary;
};

export type ComparisonFinding = {
  readonly command: string;
  readonly reference: "base" | "held";
  readonly side: "held" | "patched";
  readonly runner: RunnerName;
  readonly kind: "fewer_ran" | "more_skipped" | "no_summary";
  readonly before: RunnerSummary;
  readonly after: RunnerSummary | null;
  /** Exit 0, no summary at all, in under a tenth of the reference's time: a command that ran nothing. */
  readonly noOp: boolean;
  readonly referenceMs: number;
  readonly sideMs: number;
};

/** The records of one phase, in order: the i-th is the i-th verify command (commands stop at the first failure). */
function phaseRecords<R extends Pick<CommandRecord, "phase">>(records: readonly R[] | null, phase: CommandRecord["phase"]): R[] | null {
  return records ? records.filter((record) => record.phase === phase) : null;
}

export interface SummaryInputs {
  readonly verifyCommands: readonly string[];
  readonly patched: readonly CommandRecord[] | null;
  readonly held: readonly CommandRecord[] | null;
  readonly base: readonly CommandRecord[] | null;
}

export type CommandSummaries = {
  readonly command: string;
  /** Null: the command did not run on that side; an empty list: it ran and printed no summary handoff reads. */
  readonly base: RunnerSummary[] | null;
  readonly held: RunnerSummary[] | null;
  readonly patched: RunnerSummary[] | null;
};

function sideRuns(inputs: SummaryInputs): Record<SummarySide, (CommandRecord | undefined)[]> {
  const patched = phaseRecords(inputs.patched, "verify") ?? [];
  const held = phaseRecords(inputs.held, "held") ?? [];
  const base = phaseRecords(inputs.base, "baseline") ?? [];
  return {
    patched: inputs.verifyCommands.map((_, i) => patched[i]),
    held: inputs.verifyCommands.map((_, i) => held[i]),
    base: inputs.verifyCommands.map((_, i) => base[i]),
  };
}

/** Each verify command's summaries on each side, for result.json. */
export function commandSummaries(inputs: SummaryInputs): CommandSummaries[] {
  const runs = sideRuns(inputs);
  const list = (record: CommandRecord | undefined) => (record ? [...(record.summaries ?? [])] : null);
  return inputs.verifyCommands.map((command, i) => ({
    command,
    base: list(runs.base[i]),
    held: list(runs.held[i]),
    patched: list(runs.patched[i]),
  }));
}

/** What one side's summaries show against the reference's, runner by runner (the reference's runners only). */
function compare(command: string, pair: (typeof PAIRS)[number], before: SideRun, after: SideRun): ComparisonFinding[] {
  const findings: ComparisonFinding[] = [];
  const afterSummaries = after.summaries ?? [];
  const noOp = after.exitCode === 0 && afterSummaries.length === 0 && after.durationMs * 10 < before.durationMs;
  for (const reference of before.summaries ?? []) {
    const other = afterSummaries.find((summary) => summary.runner === reference.runner) ?? null;
    const kind =
      other === null
        ? "no_summary"
        : ranCount(other) < ranCount(reference)
          ? "fewer_ran"
          : notRunCount(other) > notRunCount(reference)
            ? "more_skipped"
            : null;
    if (kind === null) continue;
    findings.push({
      command,
      ...pair,
      runner: reference.runner,
      kind,
      before: reference,
      after: other,
      noOp: kind === "no_summary" && noOp,
      referenceMs: before.durationMs,
      sideMs: after.durationMs,
    });
  }
  return findings;
}

/** Every finding, command by command in the verify list's order, the base's comparisons first. */
export function summaryFindings(inputs: SummaryInputs): SummaryFinding[] {
  const runs = sideRuns(inputs);
  return inputs.verifyCommands.flatMap((command, i) => [
    ...(["patched", "held"] as const).flatMap((side) => exitFindings(command, side, runs[side][i])),
    ...PAIRS.flatMap((pair) => {
      const before = runs[pair.reference][i];
      const after = runs[pair.side][i];
      return before && after ? compare(command, pair, before, after) : [];
    }),
  ]);
}

/** A command that exited 0 while its runner's summary counts failures (a hook that turns exit(1) into 0, `|| true` added). */
function exitFindings(command: string, side: "held" | "patched", run: CommandRecord | undefined): ExitFinding[] {
  if (run?.exitCode !== 0) return [];
  return (run.summaries ?? [])
    .filter((summary) => summary.failed > 0)
    .map((summary) => ({ command, kind: "failed_but_exit_0", side, runner: summary.runner, after: summary }));
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;
const WHERE = { base: "on the base", held: "held to the base", patched: "with the patch" } as const;
const ms = (value: number) => (value >= 1000 ? `${(value / 1000).toFixed(1)} s` : `${value} ms`);

/** One finding in words, for the verdict's summary and the reports. */
export function summaryFindingText(f: SummaryFinding): string {
  if (f.kind === "failed_but_exit_0")
    return `\`${f.command}\` exited 0 ${WHERE[f.side]}, yet its ${f.runner} summary counts ${plural(f.after.failed, "failed test")}: something turned the failure into a pass`;
  const ran = `${plural(ranCount(f.before), "test")} ran ${WHERE[f.reference]} (${f.runner} summary)`;
  switch (f.kind) {
    case "no_summary":
      if (f.noOp)
        return `\`${f.command}\` exited 0 in ${ms(f.sideMs)} ${WHERE[f.side]} and printed no test summary, where ${ran} in ${ms(f.referenceMs)}: the signature of a command that runs nothing`;
      return `\`${f.command}\` printed no ${f.runner} summary ${WHERE[f.side]}, where ${ran}`;
    case "fewer_ran":
      return `\`${f.command}\` ran ${plural(ranCount(f.after!), "test")} ${WHERE[f.side]}, where ${ran}`;
    case "more_skipped":
      return `\`${f.command}\` skipped ${plural(notRunCount(f.after!), "test")} ${WHERE[f.side]}, where ${notRunCount(f.before)} skipped ${WHERE[f.reference]} (${f.runner} summary)`;
  }
}

const Summary = z.looseObject({
  runner: z.enum(RUNNERS),
  passed: z.number(),
  failed: z.number(),
  skipped: z.number(),
  todo: z.number(),
});

/** `verification.summaries` in result.json: what the writer records and what `show` reads back. */
export const SummaryEvidence = z.looseObject({
  /** True with `--junit`: the JUnit evidence decides, these are shown only. */
  informational: z.boolean(),
  commands: z.array(
    z.looseObject({
      command: z.string(),
      base: z.array(Summary).nullable(),
      held: z.array(Summary).nullable(),
      patched: z.array(Summary).nullable(),
    }),
  ),
  /** Each finding in words (summaryFindingText), in the verify list's order. */
  findings: z.array(z.string()),
});
export type SummaryEvidence = z.infer<typeof SummaryEvidence>;

/** The record for result.json; null when no verify command ran on any side. */
export function summaryEvidenceRecord(inputs: SummaryInputs, informational: boolean): SummaryEvidence | null {
  const commands = commandSummaries(inputs).filter((c) => c.base !== null || c.held !== null || c.patched !== null);
  if (commands.length === 0) return null;
  return { informational, commands, findings: summaryFindings(inputs).map(summaryFindingText) };
}
