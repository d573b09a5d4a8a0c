import { readFileSync } from "node:fs";
import { isIP } from "node:net";

/**
 * The sockets this machine listens on, from /proc/net: what a sandboxed process that connects to a loopback address
 * would have reached without its own network. A refused connect to a loopback port no host service holds is the
 * process's own business (a test probing a closed port, `localhost` tried on ::1 first), not a way out.
 */
export interface HostListeners {
  has(via: "tcp" | "udp", address: string, port: number): boolean;
}

/** 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104: the addresses that were this machine's own before the sandbox. */
export function isLoopback(address: string): boolean {
  const v4 = address.startsWith("::ffff:") ? address.slice(7) : address;
  if (isIP(v4) === 4) return v4.startsWith("127.");
  return isIP(address) === 6 && canonical(address) === "::1";
}

/** `0100007F:1F90` → [`127.0.0.1`, 8080]; IPv6 addresses are four host-order 32-bit words. */
function decode(field: string): [string, number] | null {
  const [hex, portHex] = field.split(":");
  if (!hex || !portHex) return null;
  const port = Number.parseInt(portHex, 16);
  if (hex.length === 8) {
    const bytes = Buffer.from(hex, "hex").reverse();
    return [[...bytes].join("."), port];
  }
  if (hex.length === 32) {
    const words: string[] = [];
    for (let i = 0; i < 32; i += 8)
      words.push(
        Buffer.from(hex.slice(i, i + 8), "hex")
          .reverse()
          .toString("hex"),
      );
    const groups = words
      .join("")
      .match(/.{4}/g)!
      .map((group) => group.replace(/^0+(?=.)/, ""));
    return [groups.join(":"), port];
  }
  return null;
}

/** Canonical text of an IPv6 address (`0:0:0:0:0:0:0:1` → `::1`), through the URL parser. */
function canonical(address: string): string {
  if (isIP(address) !== 6) return address;
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}

/** Listening TCP sockets (state 0A) and bound UDP sockets (state 07) of this network namespace. */
export function readHostListeners(): HostListeners {
  const bound = { tcp: new Set<string>(), udp: new Set<string>() };
  const files = [
    ["tcp", "/proc/net/tcp", "0A"],
    ["tcp", "/proc/net/tcp6", "0A"],
    ["udp", "/proc/net/udp", "07"],
    ["udp", "/proc/net/udp6", "07"],
  ] as const;
  for (const [via, file, state] of files) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[3] !== state) continue;
      const local = decode(fields[1] ?? "");
      if (local) bound[via].add(`${canonical(local[0])}|${local[1]}`);
    }
  }
  return {
    has(via, address, port) {
      const set = bound[via];
      const v4 = address.startsWith("::ffff:") ? address.slice(7) : address;
      const wildcard = isIP(v4) === 4 ? ["0.0.0.0", "::"] : ["::"];
      return [address, v4, `::ffff:${v4}`, ...wildcard].some((candidate) => set.has(`${canonical(candidate)}|${port}`));
    },
  };
}
