import { UsageError } from "../lib/errors.js";
import type { Unit } from "./setting.js";

// Option values as the commands read them: one check and one message for each kind, whichever command takes it.

/** A positive number of seconds, in milliseconds; undefined when not given. */
export function seconds(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0)
    throw new UsageError("bad_number", `${name} takes a positive number of seconds, not '${value}'`);
  return number * 1000;
}

/** A positive whole number; undefined when not given. */
export function wholeNumber(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0) throw new UsageError("bad_number", `${name} takes a positive whole number, not '${value}'`);
  return number;
}

const MIB = 1024 * 1024;

/**
 * A number as `.handoff.json`, a batch line and a `handoff mcp` tool call write it (seconds, MiB), in the library's
 * unit (milliseconds, bytes).
 */
export function fromFileUnit(unit: Unit | undefined, value: number): number {
  return unit === "seconds" ? value * 1000 : unit === "mebibytes" ? value * MIB : value;
}
