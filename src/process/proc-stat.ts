import { readFileSync, readdirSync } from "node:fs";

/** What /proc/<pid>/stat says about a process (Linux): the few fields handoff reads. */
export interface ProcStat {
  readonly state: string;
  readonly ppid: number;
  readonly pgrp: number;
  /** Field 22 (clock ticks after boot): with the pid, it names one process, never a reused pid. */
  readonly startTime: number;
}

export function readStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null; // gone, or no /proc
  }
  // The command name is parenthesised and may hold anything, ")" included: fields resume after the last ")".
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const startTime = Number(fields[19]);
  if (fields[0] === undefined || !Number.isSafeInteger(startTime)) return null;
  return { state: fields[0], ppid: Number(fields[1]), pgrp: Number(fields[2]), startTime };
}

/** Exited: a zombie waiting to be reaped, or dead. */
export function isGone(stat: ProcStat): boolean {
  return stat.state === "Z" || stat.state === "X";
}

/** Every pid in /proc, or null when there is no /proc to read. */
export function listPids(): number[] | null {
  try {
    return readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return null;
  }
}
