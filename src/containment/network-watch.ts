import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type RawAttempt, parsePacketLines } from "../egress/raw-attempts.js";
import type { z } from "zod";
import { captureProcess } from "../process/process.js";
import { which } from "../process/which.js";
import { TrialAnswer, cachedProbe } from "./boot-probes.js";

/**
 * What a filtered sandbox tried around handoff's proxy. Its network namespace is made here, not by bubblewrap: an
 * `unshare` whose user owns it sets the loopback up to answer every address (so a raw connect is refused at once, and
 * seen, where it would otherwise fail unseen as unreachable) and starts `tcpdump` on it, outside the sandbox's pid
 * namespace, where the agent cannot see or stop it. The filter keeps only the traces of refused attempts (a TCP
 * reset with sequence 0, an ICMP port unreachable, a DNS query), never the bytes of the traffic to the proxy.
 * Then the capabilities are dropped and bubblewrap starts, in that network, with everything else as before.
 */
export type WatchSupport =
  | {
      readonly ok: true;
      readonly programs: { readonly unshare: string; readonly setpriv: string; readonly ip: string; readonly tcpdump: string };
    }
  | { readonly ok: false; readonly reason: string };

/** At most this many packets are read per process; a flood beyond it is refused all the same, not recorded. */
export const PACKETS_KEPT = 10_000;

const FILTER = [
  "(tcp[tcpflags] == (tcp-rst|tcp-ack) and tcp[4:4] == 0)",
  "(icmp[0] == 3 and icmp[1] == 3)",
  "(udp dst port 53)",
  "(ip6 and ip6[6] == 6 and ip6[53] == 0x14 and ip6[44:4] == 0)",
  "(icmp6 and ip6[40] == 1 and ip6[41] == 4)",
].join(" or ");

/** A user namespace of its own (any uid but 0 inside: tcpdump run as root there would try to switch to its own user, which is not mapped) whose capabilities survive exec, and a network namespace. */
const NAMESPACE_ARGS = ["--user", "--map-user=65534", "--map-group=65534", "--keep-caps", "--net", "--"] as const;

/** `ip -batch` words: the loopback up and answering for every IPv4 address. */
const LOOPBACK_EVERYWHERE = "link set lo up\nroute add local 0.0.0.0/0 dev lo table local\n";

/**
 * Runs in the new user and network namespace, with its capabilities: loopback up and answering every IPv4 and IPv6
 * address, tcpdump started (its pid kept for `collect`), and the command (bubblewrap) with every capability dropped,
 * at once: tcpdump takes about 15 ms to start (the kernel's packet ring), the sandbox about as long, side by side.
 * Beside them, a subshell makes the ready file once tcpdump listens, which the sandbox's entry waits for before the
 * command starts, then ends tcpdump should handoff never collect it. Exit 125 when the network cannot be set up;
 * a tcpdump that cannot start leaves the process unwatched, said in the record.
 */
const WATCH_ENTRY = `
dir=$1 ip=$2 tcpdump=$3 setpriv=$4 filter=$5
shift 5
# IPv6 too where the namespace has it (not disabled by the kernel or by sysctl).
v6=1
read -r v6 < /proc/sys/net/ipv6/conf/lo/disable_ipv6 2>/dev/null
if [ "$v6" = 0 ]; then routes='${LOOPBACK_EVERYWHERE.replaceAll("\n", "\\n")}route add local ::/0 dev lo table local\\n'; else routes='${LOOPBACK_EVERYWHERE.replaceAll("\n", "\\n")}'; fi
printf "$routes" | "$ip" -batch - || exit 125
command -p mkfifo "$dir/said" || exit 125
"$tcpdump" -i lo -n -l -tt -s 600 --immediate-mode -c ${PACKETS_KEPT} "$filter" >"$dir/packets" 2>"$dir/said" </dev/null &
watched=$!
echo "$watched" > "$dir/pid"
(
  # tcpdump says "listening on" once it captures (read from a FIFO: nothing polls); then the command may start.
  said=
  while IFS= read -r line; do
    case $line in "listening on"*) said=listening; break ;; esac
    said=$line
  done < "$dir/said"
  if [ "$said" != listening ]; then
    # The network is as empty without the watch: the process goes on, and its record says why nothing was recorded.
    kill "$watched" 2>/dev/null
    printf '%s\\n' "tcpdump did not start: \${said:-no word from it}" > "$dir/unwatched"
  fi
  : > "$dir/shown/ready"
  [ "$said" = listening ] || exit 0
  # handoff stops tcpdump once the sandbox has ended; if handoff itself was killed, tcpdump ends 2 s after the sandbox.
  while [ -d "/proc/$$" ]; do command -p sleep 0.5; done
  command -p sleep 2
  [ "$(command -p cat "/proc/$watched/comm" 2>/dev/null)" = tcpdump ] && kill "$watched"
) </dev/null >/dev/null 2>&1 &
exec "$setpriv" --inh-caps=-all --ambient-caps=-all -- "$@"
`.trim();

/** The system's own directories only: a program the user put first on PATH is not one we vetted. */
const SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/sbin:/usr/local/bin";

let cached: Promise<WatchSupport> | null = null;

/**
 * Whether this machine can watch a sandbox's network (tcpdump, iproute2, util-linux, user namespaces). Cached in the
 * process; with `cacheDir`, a passed trial is remembered for this boot and these programs (boot-probes.ts).
 */
export function probeNetworkWatch(cacheDir: string | null = null): Promise<WatchSupport> {
  cached ??= probe(cacheDir);
  return cached;
}

async function probe(cacheDir: string | null): Promise<WatchSupport> {
  const found = { unshare: which("unshare", SYSTEM_PATH), setpriv: which("setpriv", SYSTEM_PATH), ip: which("ip", SYSTEM_PATH) };
  const tcpdump = which("tcpdump", SYSTEM_PATH);
  if (!tcpdump) return { ok: false, reason: "tcpdump is not installed (Debian/Ubuntu: apt-get install tcpdump)" };
  if (!found.ip) return { ok: false, reason: "ip is not installed (Debian/Ubuntu: apt-get install iproute2)" };
  if (!found.unshare || !found.setpriv) return { ok: false, reason: "unshare or setpriv is missing (util-linux)" };
  const support = { ok: true, programs: { unshare: found.unshare, setpriv: found.setpriv, ip: found.ip, tcpdump } } as const;
  // The part that needs this kernel's and its security modules' consent (a user namespace whose capabilities work,
  // which AppArmor can deny to an unprofiled program); tcpdump itself is tried by each process, which goes on
  // unwatched when it cannot start.
  const context = { programs: [found.unshare, found.ip], extra: [...NAMESPACE_ARGS, LOOPBACK_EVERYWHERE] };
  const tried = await cachedProbe(
    cacheDir,
    "network-watch",
    context,
    TrialAnswer,
    () => trial(found.unshare!, found.ip!),
    (t) => t.ok,
  );
  return tried.ok ? support : tried;
}

async function trial(unshare: string, ip: string): Promise<z.infer<typeof TrialAnswer>> {
  const trial = await captureProcess({
    file: unshare,
    args: [...NAMESPACE_ARGS, ip, "-batch", "-"],
    input: LOOPBACK_EVERYWHERE,
    cwd: "/",
    env: { PATH: "/usr/bin:/bin" },
    maxBuffer: 64 * 1024,
    timeoutMs: 10_000,
  }).catch((error: Error) => ({ exitCode: null, stderr: error.message }));
  if (trial.exitCode === 0) return { ok: true };
  const said = trial.stderr.trim().split("\n").at(-1) ?? "";
  return { ok: false, reason: `its network namespace could not be set up here${said ? `: ${said.slice(0, 200)}` : ""}` };
}

/** One sandboxed process's watch: `wrap` its bubblewrap command line, then `collect` once it has ended. */
export class NetworkWatch {
  readonly #dir: string;
  readonly #support: Extract<WatchSupport, { ok: true }>;

  /**
   * `dir`: a private directory outside every sandbox's view; the watch's output and pid go there, and `shown`, bound
   * read-only into the sandbox, holds the ready file.
   */
  constructor(dir: string, support: Extract<WatchSupport, { ok: true }>) {
    this.#dir = dir;
    this.#support = support;
    mkdirSync(this.shown);
  }

  /** The directory the sandbox sees (read-only): only the ready file, never what tcpdump saw. */
  get shown(): string {
    return join(this.#dir, "shown");
  }

  /** What the sandbox's entry waits for before the command starts. */
  get readyFile(): string {
    return join(this.shown, "ready");
  }

  /** The command line that makes the network, starts the watch and then runs `file` (bubblewrap, without `--unshare-net`). */
  wrap(file: string, args: readonly string[]): { file: string; args: string[] } {
    const { unshare, setpriv, ip, tcpdump } = this.#support.programs;
    return {
      file: unshare,
      args: [...NAMESPACE_ARGS, ...["/bin/sh", "-c", WATCH_ENTRY, "handoff-watch", this.#dir, ip, tcpdump, setpriv, FILTER], file, ...args],
    };
  }

  /** Once the process has ended: what tcpdump saw (or why it saw nothing); stops it and removes the directory. */
  async collect(): Promise<{ readonly attempts: RawAttempt[]; readonly unwatched: string | null }> {
    const pid = Number(readText(join(this.#dir, "pid")).trim());
    const watching = Number.isInteger(pid) && pid > 0;
    // A packet tcpdump has not yet read keeps it runnable; asleep, it has written every line (it flushes each one).
    for (let i = 0; watching && i < 100 && tcpdumpState(pid) === "R"; i++) await sleep(1);
    const attempts = parsePacketLines(readText(join(this.#dir, "packets")));
    const unwatched = readText(join(this.#dir, "unwatched")).trim().slice(0, 300) || null;
    if (watching && tcpdumpState(pid) !== null) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    rmSync(this.#dir, { recursive: true, force: true });
    return { attempts, unwatched };
  }
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** The state letter of a live tcpdump at this pid (`R` runnable, `S` asleep…), or null (exited, or a process that got its pid since). */
function tcpdumpState(pid: number): string | null {
  const stat = /^\d+ \((.*)\) (\S)/.exec(readText(`/proc/${pid}/stat`));
  return stat !== null && stat[1] === "tcpdump" && stat[2] !== "Z" ? stat[2]! : null;
}
