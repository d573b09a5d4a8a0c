import type { RunResult } from "../verdict/result.js";

type Usage = NonNullable<RunResult["agent"]["usage"]>;

/** Tokens in and out, and the cost when the CLI reported one, as the report shows them. */
export function usageText(usage: Usage): string {
  return `${usage.inputTokens} in / ${usage.outputTokens} out tokens${usage.costUsd !== null ? `, $${usage.costUsd}` : ""}`;
}

/** A duration as the report shows it: milliseconds under a second, else seconds to one decimal. */
export function ms(value: number): string {
  return value >= 1000 ? `${(value / 1000).toFixed(1)} s` : `${value} ms`;
}
