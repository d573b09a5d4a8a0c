import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";

/**
 * The names the cache gives what a process owns for a while (a build directory, a use marker, a directory on its
 * way out): `<pid>-<random>`. Once that pid is gone, nobody owns it and the next sweep may remove it.
 */
export function ownedName(pid = process.pid): string {
  return `${pid}-${randomBytes(8).toString("hex")}`;
}

/** The pid an owned name starts with, or null for a name the cache did not give. */
export function ownerPid(name: string): number | null {
  const match = /^([1-9][0-9]{0,9})-[0-9a-f]{16}$/.exec(name);
  return match ? Number(match[1]) : null;
}

/** Whether a process with this pid exists (ESRCH: gone; EPERM: it exists, another user's). A reused pid reads as alive: the safe side. */
export function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** Whether an owned name's process is gone; a name the cache did not give has no owner and counts as gone. */
export function ownerGone(name: string): boolean {
  const pid = ownerPid(name);
  return pid === null || !pidAlive(pid);
}

/**
 * When process `pid` started (field 22 of /proc/<pid>/stat, clock ticks since boot), or null when it is gone or
 * /proc cannot say. A pid is reused; a pid with its start time names one process for good.
 */
export function processStart(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces or ')': the fields after it follow the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const start = fields[19];
  return start !== undefined && /^[0-9]+$/.test(start) ? start : null;
}
