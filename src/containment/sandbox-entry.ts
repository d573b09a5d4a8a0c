import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ForwardEntry } from "../egress/egress-gate.js";
import { packageRoot } from "../lib/package-root.js";
import { which } from "../process/which.js";

/** What runs first in a sandbox whose network is filtered: the programs it needs visible, and the words put before the command. */
export interface SandboxEntry {
  readonly kind: "socat" | "node";
  readonly programs: readonly string[];
  readonly entry: readonly string[];
}

/**
 * The in-sandbox forwarder when socat is installed: one `socat` per port, each left to bubblewrap's init (so the
 * agent has no children it did not start), then, once /proc/net/tcp shows every port listening and the ready file
 * exists (the packet watch's, when there is one: "-" otherwise), the command itself takes the shell's place. socat
 * starts in a few milliseconds where Node takes about 70 (docs/performance.md). A port that is not listening, or a
 * ready file that is not there, within 5 s ends the sandbox with 125, as the Node forwarder does.
 */
const SOCAT_ENTRY = `
socat=$1; ready=$2; shift 2
ports=
while [ "$1" != "--" ]; do
  ( "$socat" -b 131072 TCP-LISTEN:"$1",bind=127.0.0.1,fork,reuseaddr,backlog=512 UNIX-CONNECT:"$2" </dev/null >/dev/null 2>&1 & )
  ports="$ports $1"
  shift 2
done
shift
for port in $ports; do
  local=$(printf '0100007F:%04X 00000000:0000 0A' "$port")
  tries=0
  until grep -q "$local" /proc/net/tcp; do
    tries=$((tries + 1))
    if [ "$tries" -gt 5000 ]; then echo "handoff forwarder: socat is not listening on 127.0.0.1:$port" >&2; exit 125; fi
    sleep 0.001 2>/dev/null || :
  done
done
tries=0
until [ "$ready" = - ] || [ -e "$ready" ]; do
  tries=$((tries + 1))
  if [ "$tries" -gt 5000 ]; then echo "handoff forwarder: the packet watch did not get ready" >&2; exit 125; fi
  sleep 0.001 2>/dev/null || :
done
exec "$@"
`.trim();

/** The Node forwarder (`sandbox/forwarder.mjs`), plain JavaScript run by handoff's own node: used where socat is not installed. */
const NODE_FORWARDER = join(packageRoot() ?? join(dirname(fileURLToPath(import.meta.url)), "..", "..", ".."), "sandbox", "forwarder.mjs");

let socatPath: string | null | undefined;

/** socat from the system's own directories (never the user's PATH: a program the user put first is not one we vetted). */
function systemSocat(): string | null {
  socatPath ??= which("socat", "/usr/bin:/bin:/usr/local/bin");
  return socatPath;
}

/**
 * The entry of a filtered sandbox: socat where the system has it, else handoff's Node forwarder. `ready`: a file the
 * command waits for (the packet watch's, which starts beside the sandbox), or null.
 */
export function sandboxEntry(
  forward: readonly ForwardEntry[],
  prefer: "socat" | "node" = "socat",
  ready: string | null = null,
): SandboxEntry {
  const socat = prefer === "socat" ? systemSocat() : null;
  if (socat) {
    const pairs = forward.flatMap(({ listen, socket }) => [String(listen), socket]);
    return {
      kind: "socat",
      programs: [socat, "/bin/sh"],
      entry: ["/bin/sh", "-c", SOCAT_ENTRY, "handoff-forwarder", socat, ready ?? "-", ...pairs, "--"],
    };
  }
  return {
    kind: "node",
    programs: [process.execPath, NODE_FORWARDER],
    entry: [process.execPath, NODE_FORWARDER, JSON.stringify(forward), ...(ready ? ["--ready", ready] : []), "--"],
  };
}
