import { lstatSync, mkdtempSync, readdirSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, relative } from "node:path";
import {
  type CgroupSupport,
  type LimitHit,
  ProcessCgroup,
  type ResourceCaps,
  createRunCgroup,
  detectCgroupSupport,
  removeCgroupDirs,
} from "./cgroup.js";
import type { SandboxChoice } from "./sandbox.js";
import { existingRealPath, isInside } from "../lib/paths.js";
import { runSystemCommandSync } from "../process/process.js";
import { RUN_MARKER_VARIABLE, runNames } from "../vocabulary/run-names.js";
import { type Bind, bwrapArgs } from "./sandbox-profile.js";
import { hiddenPathsNamed } from "./hidden-paths.js";
import { type HomeExposure, NO_TOOLCHAINS, type Toolchains } from "./toolchains.js";
import { type SurvivorReason, findSurvivors, killSurvivors, uniqueSurvivors } from "./survivors.js";
import type { EgressSettings } from "../egress/egress-policy.js";
import { isOpen } from "../egress/egress-policy.js";
import { EgressLog } from "../egress/egress-log.js";
import type { BlockReason } from "../egress/allow-rules.js";
import type { EgressRole, NetworkRecord } from "../egress/egress-record.js";
import type { KeyRecord, LoginRecord } from "../egress/key-route.js";
import { networkRecord } from "../egress/network-record.js";
import { readHostListeners } from "../egress/host-listeners.js";
import { type AroundProxyHost, recordAroundProxy } from "../egress/raw-attempts.js";
import { NetworkWatch } from "./network-watch.js";
import { type BackendNetwork, type FilteredProcess, type NetworkAccess, openFilteredProcess } from "./network-access.js";

/**
 * How handoff contains every process it starts for a run: the agent, setup commands and verification commands.
 * With bubblewrap each gets a read-only root, the source, handoff's state and the user's home hidden, only its own
 * tree writable, its own PID namespace (every descendant dies with it) and, for verification, no network.
 * Without it, handoff says so and hunts what the process group kill left behind. Both get the cgroup caps when
 * the machine offers a writable cgroup.
 */
export type JailRole = "agent" | "setup" | "verify";

export interface ContainmentSettings {
  readonly choice: SandboxChoice;
  readonly caps: ResourceCaps;
  readonly verifyNetwork: boolean;
  /** What the agent and setup may reach: `--allow-net`, and the registries the setup commands need. */
  readonly egress: EgressSettings;
  readonly runId: string;
  /** Makes the run's marker and cgroup name unique beyond its runs directory (src/vocabulary/run-names.ts). */
  readonly nonce: string;
  /** What no contained process may see: the source, handoff's state dirs, the user's home, the host's /tmp. */
  readonly hidden: readonly string[];
  /** The source repository: a write there lands in a trap directory and is reported. */
  readonly sourceRoot: string;
  /** A directory no contained process can see, for trap directories. */
  readonly scratch: string;
  /** handoff's own PATH: its directories stay readable inside (the node, git and CLIs the commands call). */
  readonly path: string;
  /** The user's toolchains in the home (and `--expose`): shown read-only, their credentials masked, their roots named. */
  readonly toolchains?: Toolchains;
  /** Told of each host a process was refused, as its jail finishes (events.jsonl gets one event each). */
  readonly onEgressBlocked?: (event: Extract<ContainmentEvent, { kind: "egress_blocked" }>) => void;
  /** Told of the run's cgroup just before it is made, so a later handoff start can clean up after a crash (checkpoint.json). */
  readonly onCgroup?: (dirs: readonly string[]) => void;
}

export interface JailSpec {
  readonly role: JailRole;
  /** What the report calls this process: the backend's name or the command. */
  readonly label: string;
  readonly cwd: string;
  /** The only writable places: the tree it works on and its private HOME and TMPDIR. */
  readonly writable: readonly string[];
  readonly readOnly?: readonly string[];
  /** No network at all, whatever the role gets (a program's `--version` check needs none). */
  readonly offline?: true;
}

/** Extra places one command needs (a CLI's install dir, its login files), added by the backend. */
export interface ExtraMounts {
  readonly readOnly?: readonly string[];
  readonly writable?: readonly string[];
  /** Files the command runs by path: shown with their directory, or alone where the directory would reveal a hidden place. */
  readonly programs?: readonly string[];
  /** An agent CLI's own hosts (its model API, its login): added to what it may reach. */
  readonly network?: BackendNetwork;
}

export type ContainmentEvent =
  | { readonly kind: "limit_hit"; readonly role: JailRole; readonly label: string; readonly limit: LimitHit }
  | { readonly kind: "blocked_write"; readonly role: JailRole; readonly label: string; readonly path: string }
  | {
      readonly kind: "leftover_killed";
      readonly role: JailRole;
      readonly label: string;
      readonly pid: number;
      readonly command: string;
      readonly found: SurvivorReason;
    }
  | { readonly kind: "leftover_alive"; readonly role: JailRole; readonly label: string; readonly pid: number; readonly command: string }
  | { readonly kind: "unsandboxed_backend"; readonly role: JailRole; readonly label: string }
  /** The agent's stderr named a path the sandbox hid from it (your home, the source, /tmp): it saw an empty place there. */
  | { readonly kind: "hidden_path_named"; readonly role: JailRole; readonly label: string; readonly path: string }
  /** A contained process tried to reach a host the egress allowlist does not name (one event per host and process). */
  | {
      readonly kind: "egress_blocked";
      readonly role: JailRole;
      readonly label: string;
      readonly host: string;
      readonly port: number;
      readonly reason: BlockReason;
      readonly attempts: number;
    };

export interface JailReport {
  readonly limitsHit: readonly LimitHit[];
  readonly events: readonly ContainmentEvent[];
}

/** One contained process tree: `wrap` its command line, run it, then `finish`. */
export interface ProcessJail {
  /** The network the process gets: none, handoff's filtered way out, or the host's. */
  readonly network: NetworkAccess;
  wrap(
    command: { readonly file: string; readonly args: readonly string[] },
    extra?: ExtraMounts,
  ): { file: string; args: string[]; env: Record<string, string> };
  finish(): Promise<JailReport>;
}

/** What `result.json` says about containment. */
export type ContainmentSummary = {
  readonly sandbox: "bwrap" | "none";
  readonly requested: "auto" | "bwrap" | "none";
  readonly reason: string | null;
  readonly bwrapVersion: string | null;
  readonly network: { readonly agent: NetworkAccess; readonly setup: NetworkAccess; readonly verify: NetworkAccess };
  readonly caps: ResourceCaps & { readonly enforcedBy: "cgroup_v1" | "cgroup_v2" | null; readonly reason: string | null };
  readonly events: readonly ContainmentEvent[];
  /** What every contained process saw of the hidden home, read-only, and why (toolchains, `--expose`). */
  readonly fromHome: readonly HomeExposure[];
  /** Credential files and places inside those, shown empty. */
  readonly masked: readonly string[];
  /** What handoff could not contain in this run, in words. Empty with the sandbox. */
  readonly uncontained: readonly string[];
};

const UNCONTAINED_WITHOUT_SANDBOX = [
  "the agent and the commands could read and write anything this user can: the source repository and its .git are checked afterwards, not protected",
  "the user's home (credentials, shell and git config) was readable and writable",
  "other processes' environments were readable through /proc",
  "verification commands had the network",
  "the agent and the setup commands had this machine's network, unfiltered: no egress allowlist, and the hosts they reached are not recorded",
] as const;

/** What could outlive the run without a sandbox: less where the run's cgroup holds every process. */
function escapeRoute(cgroups: CgroupSupport): string {
  return cgroups.kind === "unavailable"
    ? "a process that left its process group, dropped handoff's marker and left the workspace could outlive the run"
    : "a process that moved itself out of the run's cgroup (root can) could outlive the run";
}

export class Containment {
  readonly settings: ContainmentSettings;
  readonly #cgroups: CgroupSupport;
  /** The run's own cgroup, made with the first contained process; null until then or when unavailable. */
  #runCgroup: ReturnType<typeof createRunCgroup> | null = null;
  readonly #events: ContainmentEvent[] = [];
  /** Where the agent's sandboxes showed a hidden place again (its workspace, home, CLI): not hidden from it. */
  readonly #agentBinds = new Set<string>();
  /** Every connection the agent and setup tried through the egress proxy, for result.json `network`. */
  readonly #egressLog = new EgressLog();
  /** What became of each model key the agent was given (result.json `network.keys`). */
  readonly #keys = new Map<string, KeyRecord>();
  /** An agent of this run was a CLI with its own model route (it came with the backend's network needs). */
  #agentHasModel = false;
  /** Why a process's packet watch saw nothing (tcpdump could not start): the run's record says it was not recorded. */
  #unwatched: string | null = null;
  /** Each login file the agent could read and write (result.json `network.logins`). */
  readonly #logins = new Map<string, LoginRecord>();
  #count = 0;

  constructor(settings: ContainmentSettings, cgroups: CgroupSupport = detectCgroupSupport()) {
    this.settings = settings;
    this.#cgroups = cgroups;
  }

  get #toolchains(): Toolchains {
    return this.settings.toolchains ?? NO_TOOLCHAINS;
  }

  get sandboxed(): boolean {
    return this.settings.choice.kind === "bwrap";
  }

  /** What a role's processes get: verification none (unless `--verify-network`), the agent and setup the filtered way out. */
  network(role: JailRole): NetworkAccess {
    if (role === "verify") return this.sandboxed && !this.settings.verifyNetwork ? "none" : "host";
    return this.sandboxed && !isOpen(this.settings.egress.rules) ? "filtered" : "host";
  }

  jail(spec: JailSpec): ProcessJail {
    const id = ++this.#count;
    const settings = this.settings;
    let cgroup: ProcessCgroup | null = null;
    try {
      const run = this.#runCgroupOnce();
      if (run) cgroup = ProcessCgroup.create(run.support, `${spec.role}-${id}`, settings.caps);
    } catch {
      cgroup = null; // a cgroup that could not be made means no caps for this process, never a failed run
    }
    const trap = this.sandboxed ? mkdtempSync(join(settings.scratch, `trap-${spec.role}-`)) : null;
    let wrapped = false;
    const filtered: FilteredProcess[] = [];
    const watches: { readonly watch: NetworkWatch; readonly role: EgressRole }[] = [];
    // bwrap makes an empty mount point in the trap for a bind inside the source: not a write of the process's.
    const mountPoints = new Set<string>();
    const choice = settings.choice;
    // Without the sandbox every role has the host's network (network() says so), offline or not.
    const access: NetworkAccess = choice.kind === "bwrap" && spec.offline ? "none" : this.network(spec.role);

    return {
      network: access,
      wrap: (command, extra = {}) => {
        wrapped = true;
        let file = command.file;
        let args = [...command.args];
        let proxyEnv: Readonly<Record<string, string>> = {};
        if (choice.kind === "bwrap") {
          if (spec.role === "agent" && extra.network) this.#agentHasModel = true;
          const filtering = access === "filtered" && spec.role !== "verify";
          // The watch makes the sandbox's network itself, so that it can see what goes around the proxy.
          const watch =
            filtering && choice.watch.ok
              ? { watch: new NetworkWatch(mkdtempSync(join(settings.scratch, "watch-")), choice.watch), role: spec.role }
              : null;
          const egress = filtering ? this.#openEgress(spec.role, spec.label, extra, watch?.watch.readyFile ?? null) : null;
          if (egress) filtered.push(egress);
          for (const key of egress?.keys ?? []) this.#keys.set(`${key.backend}\0${key.variable}`, key);
          if (!egress) this.#noteKeysWithAgent(extra, "--allow-net '*': the agent had the host network");
          const binds = this.#binds(
            spec,
            egress
              ? {
                  ...extra,
                  readOnly: [...(extra.readOnly ?? []), ...egress.readOnly, ...(watch ? [watch.watch.shown] : [])],
                  programs: [...(extra.programs ?? []), ...egress.inside.programs],
                }
              : extra,
          );
          for (const bind of binds) mountPoints.add(bind.dest);
          if (spec.role === "agent") for (const bind of binds) this.#agentBinds.add(bind.dest);
          const prefix = bwrapArgs({
            hide: [...settings.hidden, ...this.#toolchains.masked],
            binds,
            traps: trap ? [{ path: existingRealPath(settings.sourceRoot) ?? settings.sourceRoot, hostDir: trap }] : [],
            network: access === "host" || watch !== null,
            cwd: spec.cwd,
            uid: sandboxId(process.getuid?.() ?? 1000),
            gid: sandboxId(process.getgid?.() ?? 1000),
          });
          args = [...prefix, ...(egress?.inside.entry ?? []), file, ...(egress?.leadingArgs ?? []), ...args];
          file = choice.executable;
          if (watch) {
            ({ file, args } = watch.watch.wrap(file, args));
            watches.push(watch);
          }
          if (egress) proxyEnv = egress.env;
        }
        if (choice.kind !== "bwrap") this.#noteKeysWithAgent(extra, "no sandbox: the agent had the host network");
        this.#noteLogins(extra, access);
        this.#noteKeptKeys(extra);
        // The toolchains' root variables, sandbox or not: every process gets a private HOME, where rustup would look.
        const env: Record<string, string> = {
          ...this.#toolchains.env,
          ...proxyEnv,
          HANDOFF_RUN_ID: settings.runId,
          [RUN_MARKER_VARIABLE]: settings.nonce,
        };
        if (cgroup) {
          ({ file, args } = cgroup.wrap(file, args));
          env.HANDOFF_CGROUP_PROCS = cgroup.procsFiles;
        }
        return { file, args, env };
      },
      finish: async () => {
        const events: ContainmentEvent[] = [];
        const limitsHit = cgroup?.limitsHit() ?? [];
        for (const limit of limitsHit) events.push({ kind: "limit_hit", role: spec.role, label: spec.label, limit });
        if (!wrapped && spec.role === "agent" && this.sandboxed)
          events.push({ kind: "unsandboxed_backend", role: spec.role, label: spec.label });
        if (!this.sandboxed) {
          // The group kill is done; whatever still carries the run's marker or holds the tree escaped it.
          // Its cgroup (where there is one) holds even what dropped the marker and left the tree.
          const survivors = uniqueSurvivors([
            ...findSurvivors({ nonce: settings.nonce, roots: [...spec.writable, ...(spec.readOnly ?? [])] }),
            ...(cgroup?.members() ?? []),
          ]);
          const { killed, stillAlive } = await killSurvivors(survivors);
          for (const s of killed)
            events.push({ kind: "leftover_killed", role: spec.role, label: spec.label, pid: s.pid, command: s.command, found: s.reason });
          for (const s of stillAlive)
            events.push({ kind: "leftover_alive", role: spec.role, label: spec.label, pid: s.pid, command: s.command });
        }
        // Before the cgroup's kill, which would end tcpdump too: the sandbox is gone, its last packets are not.
        const aroundProxy: AroundProxyHost[] = [];
        for (const { watch, role } of watches) {
          const seen = await watch.collect();
          this.#unwatched ??= seen.unwatched;
          aroundProxy.push(...recordAroundProxy(seen.attempts, { role, label: spec.label }, this.#egressLog, readHostListeners));
        }
        if (cgroup) {
          await cgroup.killAll();
          await cgroup.remove();
        }
        for (const host of aroundProxy) {
          const event = { kind: "egress_blocked", role: spec.role, label: spec.label, ...host } as const;
          events.push(event);
          settings.onEgressBlocked?.(event);
        }
        // After every process of the tree is gone: nothing can open a connection any more.
        for (const egress of filtered) {
          await egress.gate.close();
          for (const forwarder of egress.forwarders) await forwarder.close();
          for (const host of egress.gate.blockedHosts()) {
            const event = { kind: "egress_blocked", role: spec.role, label: spec.label, ...host } as const;
            events.push(event);
            settings.onEgressBlocked?.(event);
          }
        }
        if (trap) {
          for (const path of trappedWrites(trap, settings.sourceRoot)) {
            if (!mountPoints.has(path)) events.push({ kind: "blocked_write", role: spec.role, label: spec.label, path });
          }
        }
        this.#events.push(...events);
        return { limitsHit, events };
      },
    };
  }

  /** Each login file the agent's CLI could read and rewrite, and how far it could send it. */
  #noteLogins(extra: ExtraMounts, access: NetworkAccess): void {
    const backend = extra.network?.backend;
    if (!backend) return;
    const reach =
      access === "filtered"
        ? "the agent could send it only to the hosts the allowlist names"
        : access === "host"
          ? "the agent had this machine's network"
          : "the agent had no network";
    for (const file of extra.network?.logins ?? [])
      if (!this.#logins.has(file))
        this.#logins.set(file, {
          backend,
          file,
          held: "with_agent",
          detail: `a login that refreshes stays a file in ${backend}'s home, readable and writable so that no refreshed token is lost; ${reach}`,
        });
  }

  /** A variable named like a key that no key route takes: it is in the agent's environment, said so. */
  #noteKeptKeys(extra: ExtraMounts): void {
    const backend = extra.network?.backend;
    if (!backend) return;
    for (const variable of extra.network?.keptKeys ?? []) {
      const key = `${backend}\0${variable}`;
      if (!this.#keys.has(key))
        this.#keys.set(key, {
          backend,
          variable,
          held: "with_agent",
          detail: `passed with --env, and not a key handoff can point ${backend} at its model forwarder for (docs/backends.md): it is in the agent's environment`,
        });
    }
  }

  /** A key that stayed in the agent's environment: no filtered network to keep it out with. */
  #noteKeysWithAgent(extra: ExtraMounts, why: string): void {
    for (const { route } of extra.network?.keys ?? []) {
      const key = `${extra.network!.backend}\0${route.variable}`;
      if (!this.#keys.has(key))
        this.#keys.set(key, { backend: extra.network!.backend, variable: route.variable, held: "with_agent", detail: why });
    }
  }

  /** The egress gate of one agent or setup process: `--allow-net`, plus setup's registries or the backend's own hosts. */
  #openEgress(role: "agent" | "setup", label: string, extra: ExtraMounts, ready: string | null): FilteredProcess {
    const { egress } = this.settings;
    return openFilteredProcess({
      role,
      label,
      ready,
      scratch: this.settings.scratch,
      rules: role === "setup" ? [...egress.rules, ...egress.setupRules] : egress.rules,
      backend: role === "agent" ? (extra.network ?? null) : null,
      log: this.#egressLog,
    });
  }

  #runCgroupOnce(): ReturnType<typeof createRunCgroup> | null {
    if (this.#cgroups.kind === "unavailable") return null;
    if (!this.#runCgroup) {
      // Recorded before it is made: a crash in between leaves nothing the sweep does not know of.
      this.#runCgroup = createRunCgroup(this.#cgroups, runNames(this.settings.runId, this.settings.nonce).cgroup, (dirs) =>
        this.settings.onCgroup?.(dirs),
      );
    }
    return this.#runCgroup;
  }

  /** Removes the run's cgroup once every contained process is gone (each jail's `finish` saw to that). */
  async close(): Promise<void> {
    if (this.#runCgroup) await removeCgroupDirs(this.#runCgroup.dirs);
    this.#runCgroup = null;
  }

  /** The workspace (or checkout) and private dirs writable, the user's PATH and the backend's needs read-only. */
  #binds(spec: JailSpec, extra: ExtraMounts): Bind[] {
    const hidden = this.settings.hidden.map((path) => existingRealPath(path) ?? path);
    const binds: Bind[] = [];
    const seen = new Set<string>();
    const add = (path: string, access: "read-only" | "writable") => {
      const writable = access === "writable";
      if (!isAbsolute(path)) return;
      const source = existingRealPath(path);
      if (!source || seen.has(`${path}\0${writable}`)) return;
      // Read-only binds matter only where the path would otherwise be hidden.
      if (!writable && !hidden.some((root) => isInside(source, root))) return;
      seen.add(`${path}\0${writable}`);
      binds.push({ source, dest: path, writable });
    };
    // A backend's read-only dir must never bring back a hidden place whole: /tmp, your home, the source.
    const revealsHidden = (path: string) => {
      const real = existingRealPath(path);
      return real !== null && hidden.some((root) => isInside(root, real));
    };
    for (const dir of this.settings.path.split(delimiter)) if (!revealsHidden(dir)) add(dir, "read-only");
    for (const { path } of this.#toolchains.exposed) if (!revealsHidden(path)) add(path, "read-only");
    // A manager's directory it writes in ordinary use (pyenv's shims): a copy of its own, thrown away with the run.
    for (const dir of this.#toolchains.scratchCopies) {
      const copy = mkdtempSync(join(this.settings.scratch, "toolchain-"));
      // The system's cp -a, as for every tree handoff copies (docs/threat-model.md F5); without the copy, read-only.
      if (runSystemCommandSync("cp", ["-a", "--", `${dir}/.`, copy])) binds.push({ source: copy, dest: dir, writable: true });
    }
    for (const path of spec.readOnly ?? []) add(path, "read-only");
    for (const path of extra.readOnly ?? []) if (!revealsHidden(path)) add(path, "read-only");
    // A program named by path: its directory (its helpers sit beside it), or the file alone where that would reveal.
    for (const program of extra.programs ?? []) add(revealsHidden(dirname(program)) ? program : dirname(program), "read-only");
    for (const path of [...spec.writable, ...(extra.writable ?? [])]) add(path, "writable");
    return binds;
  }

  /** Records the hidden paths the agent's stderr names (at most 10), so a report can say why it found nothing there. */
  noteHiddenPathsNamed(label: string, stderr: string): void {
    if (!this.sandboxed) return;
    for (const path of hiddenPathsNamed(stderr, this.settings.hidden, [...this.#agentBinds]))
      this.#events.push({ kind: "hidden_path_named", role: "agent", label, path });
  }

  /** result.json `network`: how the agent and setup reached out, and every host they tried. */
  networkRecord(): NetworkRecord {
    return networkRecord({
      access: this.network("agent"),
      sandboxed: this.sandboxed,
      rules: this.settings.egress,
      backendOutside: this.#events.some((event) => event.kind === "unsandboxed_backend"),
      log: this.#egressLog,
      keys: [...this.#keys.values()],
      logins: [...this.#logins.values()],
      agentHasModel: this.#agentHasModel,
      watch:
        this.settings.choice.kind !== "bwrap"
          ? null
          : this.#unwatched
            ? { ok: false, reason: this.#unwatched }
            : this.settings.choice.watch,
    });
  }

  summary(): ContainmentSummary {
    const { choice, caps } = this.settings;
    const cgroups = this.#cgroups;
    return {
      sandbox: choice.kind,
      requested: choice.requested,
      reason: choice.kind === "none" ? choice.reason : null,
      bwrapVersion: choice.kind === "bwrap" ? choice.version : null,
      network: { agent: this.network("agent"), setup: this.network("setup"), verify: this.network("verify") },
      caps: {
        ...caps,
        enforcedBy: cgroups.kind === "v1" ? "cgroup_v1" : cgroups.kind === "v2" ? "cgroup_v2" : null,
        reason: cgroups.kind === "unavailable" ? cgroups.reason : null,
      },
      events: [...this.#events],
      fromHome: choice.kind === "bwrap" ? [...this.#toolchains.exposed] : [],
      masked: choice.kind === "bwrap" ? [...this.#toolchains.masked] : [],
      uncontained: choice.kind === "bwrap" ? [] : [...UNCONTAINED_WITHOUT_SANDBOX, escapeRoute(cgroups)],
    };
  }
}

/** Inside the sandbox nobody is root: uid 0 maps to an ordinary id (which also lets a CLI nest its own sandbox). */
function sandboxId(id: number): number {
  return id === 0 ? 1000 : id;
}

/** What a contained process wrote where the source repository appeared to be, relative to it (bounded). */
function trappedWrites(trap: string, sourceRoot: string, limit = 50): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (found.length >= limit) return;
      const path = join(dir, name);
      let isDir = false;
      try {
        isDir = lstatSync(path).isDirectory();
      } catch {
        continue;
      }
      if (isDir && depth < 16) walk(path, depth + 1);
      else found.push(join(sourceRoot, relative(trap, path)));
    }
  };
  walk(trap, 0);
  return found;
}
