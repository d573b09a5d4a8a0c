import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { totalmem } from "node:os";
import { join } from "node:path";
import { type Survivor, findCgroupMembers, killSurvivors } from "./survivors.js";

/**
 * Resource caps for one contained process tree: a cgroup with a process limit and a memory limit. Membership is
 * inherited and `setsid` does not leave it, so the cgroup also lists every process the tree started.
 * cgroup v2 (a writable subtree with pids and memory delegated) or v1 (writable pids and memory hierarchies, as
 * root); anything else means no caps, reported as such.
 */
export type ResourceCaps = {
  /** Most tasks (processes and threads) at once. */
  readonly processes: number;
  readonly memoryBytes: number;
};

export type CgroupSupport =
  | { readonly kind: "v2"; readonly parent: string }
  | { readonly kind: "v1"; readonly pidsParent: string; readonly memoryParent: string }
  | { readonly kind: "unavailable"; readonly reason: string };

interface MountInfo {
  readonly mountPoint: string;
  readonly fsType: string;
  readonly superOptions: readonly string[];
}

function mounts(): MountInfo[] {
  const text = readFileSync("/proc/self/mountinfo", "utf8");
  return text.split("\n").flatMap((line) => {
    const [left, right] = line.split(" - ");
    if (!left || !right) return [];
    const mountPoint = left.split(" ")[4]!.replace(/\\040/g, " ");
    const [fsType, , superOptions = ""] = right.split(" ");
    return [{ mountPoint, fsType: fsType!, superOptions: superOptions.split(",") }];
  });
}

/** This process's cgroup path per hierarchy: "" for v2, else the controller name. */
function ownCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const match = line.match(/^\d+:([^:]*):(.*)$/);
    if (!match) continue;
    for (const controller of match[1]!.split(",")) own.set(controller, match[2]!);
  }
  return own;
}

function canCreateIn(dir: string): boolean {
  const probe = join(dir, `handoff-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

let detected: CgroupSupport | null = null;

export function detectCgroupSupport(): CgroupSupport {
  detected ??= detect();
  return detected;
}

function detect(): CgroupSupport {
  let all: MountInfo[];
  let own: Map<string, string>;
  try {
    all = mounts();
    own = ownCgroups();
  } catch {
    return { kind: "unavailable", reason: "no /proc cgroup information (not Linux?)" };
  }
  const v2 = all.find((mount) => mount.fsType === "cgroup2");
  if (v2 && own.has("")) {
    const parent = join(v2.mountPoint, own.get("")!);
    try {
      const delegated = readFileSync(join(parent, "cgroup.subtree_control"), "utf8").split(/\s+/);
      if (delegated.includes("pids") && delegated.includes("memory") && canCreateIn(parent)) return { kind: "v2", parent };
    } catch {
      // not usable; try v1
    }
  }
  const v1 = (controller: string) => {
    const mount = all.find((entry) => entry.fsType === "cgroup" && entry.superOptions.includes(controller));
    return mount && own.has(controller) ? join(mount.mountPoint, own.get(controller)!) : null;
  };
  const pidsParent = v1("pids");
  const memoryParent = v1("memory");
  if (pidsParent && memoryParent && canCreateIn(pidsParent) && canCreateIn(memoryParent)) return { kind: "v1", pidsParent, memoryParent };
  return {
    kind: "unavailable",
    reason: "no writable cgroup with the pids and memory controllers (run as root, or in a delegated cgroup v2 subtree)",
  };
}

export type LimitHit = "processes" | "memory";

type Usable = Exclude<CgroupSupport, { kind: "unavailable" }>;

/**
 * The run's own cgroup, `name` (`handoff-<runId>-<nonce>`, src/vocabulary/run-names.ts) in each hierarchy: each contained
 * process tree gets a child in it, so a crash sweep finds every process of the run under one tracked name.
 * `beforeCreate` is told the directories before they exist (to record them). Returns the support rooted there.
 */
export function createRunCgroup(
  support: Usable,
  name: string,
  beforeCreate: (dirs: readonly string[]) => void = () => {},
): { readonly support: Usable; readonly dirs: readonly string[] } {
  if (support.kind === "v2") {
    const parent = join(support.parent, name);
    beforeCreate([parent]);
    mkdirSync(parent);
    writeFileSync(join(parent, "cgroup.subtree_control"), "+pids +memory");
    return { support: { kind: "v2", parent }, dirs: [parent] };
  }
  const pidsParent = join(support.pidsParent, name);
  const memoryParent = join(support.memoryParent, name);
  beforeCreate([pidsParent, memoryParent]);
  mkdirSync(pidsParent);
  mkdirSync(memoryParent);
  return { support: { kind: "v1", pidsParent, memoryParent }, dirs: [pidsParent, memoryParent] };
}

/** rmdir with a short retry: a task that is still dying keeps a cgroup busy for a moment. Returns what it removed. */
export async function removeCgroupDirs(dirs: readonly string[]): Promise<string[]> {
  const removed: string[] = [];
  for (const dir of dirs) {
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        rmdirSync(dir);
        removed.push(dir);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }
  return removed;
}

/** One cgroup (one dir per hierarchy on v1) holding one contained process tree. */
export class ProcessCgroup {
  readonly dirs: readonly string[];
  readonly #support: Usable;

  private constructor(support: Usable, dirs: readonly string[]) {
    this.#support = support;
    this.dirs = dirs;
  }

  static create(support: Usable, name: string, caps: ResourceCaps): ProcessCgroup {
    if (support.kind === "v2") {
      const dir = join(support.parent, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "pids.max"), String(caps.processes));
      writeFileSync(join(dir, "memory.max"), String(caps.memoryBytes));
      writeFile(join(dir, "memory.swap.max"), "0");
      return new ProcessCgroup(support, [dir]);
    }
    const pids = join(support.pidsParent, name);
    const memory = join(support.memoryParent, name);
    mkdirSync(pids, { recursive: true });
    mkdirSync(memory, { recursive: true });
    writeFileSync(join(pids, "pids.max"), String(caps.processes));
    writeFileSync(join(memory, "memory.limit_in_bytes"), String(caps.memoryBytes));
    writeFile(join(memory, "memory.memsw.limit_in_bytes"), String(caps.memoryBytes));
    return new ProcessCgroup(support, [pids, memory]);
  }

  /** The argv that joins the cgroup before anything runs (no window in which a child could fork outside it). */
  wrap(file: string, args: readonly string[]): { file: string; args: string[] } {
    const join = 'for f in $HANDOFF_CGROUP_PROCS; do echo $$ > "$f" || exit 125; done; unset HANDOFF_CGROUP_PROCS; exec "$@"';
    return { file: "/bin/sh", args: ["-c", join, "handoff-cgroup", file, ...args] };
  }

  /** The value of HANDOFF_CGROUP_PROCS for `wrap` (cgroup paths never contain spaces: handoff names them). */
  get procsFiles(): string {
    return this.dirs.map((dir) => join(dir, "cgroup.procs")).join(" ");
  }

  /** Every process of the tree still running (v1: the pids hierarchy lists them all). */
  members(): Survivor[] {
    return findCgroupMembers(this.dirs[0]!);
  }

  /** Which cap the tree ran into, if any. */
  limitsHit(): LimitHit[] {
    const hit: LimitHit[] = [];
    const read = (path: string) => {
      try {
        return readFileSync(path, "utf8");
      } catch {
        return "";
      }
    };
    const counter = (text: string, key: string) => Number(text.match(new RegExp(`^${key} (\\d+)`, "m"))?.[1] ?? 0);
    const [first, second] = this.dirs as [string, string | undefined];
    if (counter(read(join(first, "pids.events")), "max") > 0) hit.push("processes");
    if (this.#support.kind === "v2") {
      if (counter(read(join(first, "memory.events")), "oom_kill") > 0) hit.push("memory");
    } else if (second && counter(read(join(second, "memory.oom_control")), "oom_kill") > 0) {
      hit.push("memory"); // only a kill counts: reaching the limit and reclaiming page cache is normal
    }
    return hit;
  }

  /** Kills every member until none is left (bounded: a member may fork while it is being killed). */
  async killAll(): Promise<void> {
    requestCgroupKill(this.dirs[0]!);
    for (let round = 0; round < 20; round++) {
      const members = this.members();
      if (members.length === 0) return;
      await killSurvivors(members, 100);
    }
  }

  async remove(): Promise<void> {
    await removeCgroupDirs(this.dirs);
  }
}

/** cgroup v2 (Linux 5.14+) kills every member at once; elsewhere the write fails and members are killed one by one. */
export function requestCgroupKill(dir: string): void {
  writeFile(join(dir, "cgroup.kill"), "1");
}

function writeFile(path: string, value: string): void {
  try {
    writeFileSync(path, value);
  } catch {
    // optional knob (swap accounting off, or cgroup.kill before Linux 5.14)
  }
}

/** Half the machine's memory, at most 8 GiB, for each contained process tree (`--max-memory`'s default). */
export function defaultMemoryCap(total = totalmem()): number {
  return Math.min(8 * 1024 ** 3, Math.floor(total / 2));
}
