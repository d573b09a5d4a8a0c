import { createSocket } from "node:dgram";
import { type AddressInfo, createServer } from "node:net";
import { describe, expect, test } from "vitest";
import { probeNetworkWatch, NetworkWatch } from "../src/containment/network-watch.js";
import { EgressLog } from "../src/egress/egress-log.js";
import { isLoopback, readHostListeners } from "../src/egress/host-listeners.js";
import { parsePacketLine, parsePacketLines, recordAroundProxy } from "../src/egress/raw-attempts.js";
import { tempDir } from "./helpers/repo.js";

/** Lines as tcpdump 4.99 prints them for the watch's filter (`-n -tt`). */
const LINES = {
  tcpRefused: "1796528874.039985 IP 127.0.0.2.4444 > 127.0.0.1.46332: Flags [R.], seq 0, ack 3911539036, win 0, length 0",
  tcp6Refused: "1796528874.040861 IP6 2001:db8::1.443 > ::1.33214: Flags [R.], seq 0, ack 471087316, win 0, length 0",
  udpRefused: "1796528874.041800 IP 198.51.100.1 > 198.51.100.1: ICMP 198.51.100.1 udp port 9999 unreachable, length 38",
  udp6Refused: "1796528986.578787 IP6 ::1 > ::1: ICMP6, destination unreachable, unreachable port, 2001:db8::5 udp port 9999, length 58",
  dnsQuery: "1796528874.037748 IP 10.255.255.53.43519 > 10.255.255.53.53: 37427+ A? Evil.Example. (30)",
  dns6Query: "1796528986.578898 IP6 ::1.44983 > 2001:db8::53.53: 1+ AAAA? evil.example. (30)",
  dnsRefused: "1796528874.038159 IP 10.255.255.53 > 10.255.255.53: ICMP 10.255.255.53 udp port 53 unreachable, length 66",
  notDns: "1796528874.038300 IP 10.0.0.9.40000 > 10.0.0.2.53: [|domain]",
  abortedConnection: "1796528874.050000 IP 127.0.0.1.3000 > 127.0.0.1.51234: Flags [R.], seq 2793842, ack 1, win 512, length 0",
};

describe("the packet watch's lines: what went around the proxy", () => {
  test("a refused TCP connect is its reset, from the address and port it tried (IPv4 and IPv6)", () => {
    expect(parsePacketLine(LINES.tcpRefused)).toEqual({ at: 1796528874040, via: "tcp", host: "127.0.0.2", port: 4444, server: null });
    expect(parsePacketLine(LINES.tcp6Refused)).toMatchObject({ via: "tcp", host: "2001:db8::1", port: 443 });
  });

  test("a refused UDP datagram is its ICMP port unreachable (IPv4 and IPv6)", () => {
    expect(parsePacketLine(LINES.udpRefused)).toMatchObject({ via: "udp", host: "198.51.100.1", port: 9999 });
    expect(parsePacketLine(LINES.udp6Refused)).toMatchObject({ via: "udp", host: "2001:db8::5", port: 9999 });
  });

  test("a DNS query is the name it asked for; its refusal is not counted again; other datagrams to port 53 count by address", () => {
    expect(parsePacketLine(LINES.dnsQuery)).toMatchObject({ via: "dns", host: "evil.example", port: 53, server: "10.255.255.53" });
    expect(parsePacketLine(LINES.dns6Query)).toMatchObject({ via: "dns", host: "evil.example", server: "2001:db8::53" });
    expect(parsePacketLine(LINES.dnsRefused)).toBeNull();
    expect(parsePacketLine(LINES.notDns)).toMatchObject({ via: "udp", host: "10.0.0.2", port: 53 });
    // A name that is not a host name's characters (markdown, say) is not taken as one.
    const odd = "1796528874.1 IP 10.0.0.9.40000 > 10.0.0.2.53: 7+ A? [x](https://evil.example). (40)";
    expect(parsePacketLine(odd)).toMatchObject({ via: "udp", host: "10.0.0.2", port: 53 });
  });

  test("a reset that ends an open connection, tcpdump's own words and garbage are not attempts", () => {
    expect(parsePacketLine(LINES.abortedConnection)).toBeNull();
    expect(parsePacketLine("listening on lo, link-type EN10MB (Ethernet), snapshot length 600 bytes")).toBeNull();
    expect(parsePacketLine("1796528874.0 IP 1.2.3.4.99999 > 5.6.7.8.1: Flags [R.], seq 0, ack 1")).toBeNull();
    expect(parsePacketLines(`${Object.values(LINES).join("\n")}\r\n\n`)).toHaveLength(7);
  });
});

describe("recording what went around the proxy", () => {
  const attempt = (host: string, port: number, via: "tcp" | "udp" | "dns" = "tcp") => ({ at: 1_000, via, host, port, server: null });

  test("each attempt is blocked in the log, kept apart from the proxy's own tally of the same host, and counted per host for the events", () => {
    const log = new EgressLog();
    log.record({ role: "agent", label: "claude", host: "203.0.113.7", port: 443, via: "connect", rule: null, reason: "private_address" });
    const hosts = recordAroundProxy(
      [attempt("203.0.113.7", 443), attempt("203.0.113.7", 443), attempt("evil.example", 53, "dns")],
      { role: "agent", label: "claude" },
      log,
      () => ({ has: () => false }),
    );
    expect(hosts).toEqual([
      { host: "203.0.113.7", port: 443, reason: "outside_proxy", attempts: 2 },
      { host: "evil.example", port: 53, reason: "dns_lookup", attempts: 1 },
    ]);
    const blocked = log.tallies().blocked.map((t) => [t.host, t.via, t.reason, t.attempts]);
    expect(blocked).toEqual([
      ["203.0.113.7", "connect", "private_address", 1],
      ["203.0.113.7", "tcp", "outside_proxy", 2],
      ["evil.example", "dns", "dns_lookup", 1],
    ]);
    // In the order they were tried: the watch's attempts carry the packet's time.
    expect(log.tallies().attempts[0]).toMatchObject({ at: new Date(1_000).toISOString(), via: "tcp" });
  });

  test("a refused loopback port no service of this machine holds is the process's own business; one that a service holds is recorded", () => {
    const log = new EgressLog();
    const held = new Set(["127.0.0.1|6379", "::1|5432"]);
    const hosts = recordAroundProxy(
      [attempt("127.0.0.1", 6379), attempt("::1", 3000), attempt("127.0.0.1", 3000), attempt("::1", 5432), attempt("10.0.0.5", 3000)],
      { role: "setup", label: "npm ci" },
      log,
      () => ({ has: (_via, host, port) => held.has(`${host}|${port}`) }),
    );
    expect(hosts.map((h) => `${h.host}:${h.port}`)).toEqual(["127.0.0.1:6379", "::1:5432", "10.0.0.5:3000"]);
  });

  test("this machine's listeners are read from /proc/net: exact addresses and the wildcard, TCP and UDP", async () => {
    const tcp = createServer();
    await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.2", resolve));
    const any = createServer();
    await new Promise<void>((resolve) => any.listen(0, "0.0.0.0", resolve));
    const udp = createSocket("udp4");
    await new Promise<void>((resolve) => udp.bind(0, "127.0.0.1", resolve));
    try {
      const host = readHostListeners();
      const tcpPort = (tcp.address() as AddressInfo).port;
      const anyPort = (any.address() as AddressInfo).port;
      expect(host.has("tcp", "127.0.0.2", tcpPort)).toBe(true);
      expect(host.has("tcp", "127.0.0.1", tcpPort)).toBe(false);
      expect(host.has("tcp", "127.0.0.9", anyPort)).toBe(true);
      expect(host.has("tcp", "::ffff:127.0.0.2", tcpPort)).toBe(true);
      expect(host.has("udp", "127.0.0.1", udp.address().port)).toBe(true);
      expect(host.has("tcp", "127.0.0.1", udp.address().port)).toBe(false);
    } finally {
      tcp.close();
      any.close();
      udp.close();
    }
  });

  test("loopback is 127.0.0.0/8, ::1 and IPv4-mapped 127 addresses", () => {
    expect(["127.0.0.1", "127.4.5.6", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"].map(isLoopback)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(["10.0.0.1", "2001:db8::1", "::", "evil.example", "::ffff:10.0.0.1"].map(isLoopback)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

const watch = await probeNetworkWatch();
if (!watch.ok && process.env.HANDOFF_SANDBOX_TESTS === "required") throw new Error(`the packet watch is required here: ${watch.reason}`);

/** The command as a sandbox's entry starts it: once the watch's ready file is there. */
function afterReady(probe: NetworkWatch, command: readonly string[]): { file: string; args: string[] } {
  const wait = 'until [ -e "$0" ]; do sleep 0.001; done; exec "$@"';
  return probe.wrap("/bin/sh", ["-c", wait, probe.readyFile, ...command]);
}

describe.runIf(watch.ok)("the packet watch around a process", () => {
  test("every way around the proxy fails at once and is seen; a connection to the process's own server is neither refused nor seen", async () => {
    const support = watch as Extract<typeof watch, { ok: true }>;
    const dir = tempDir("handoff-watch-test");
    const probe = new NetworkWatch(dir, support);
    const script = [
      "const net = require('net'), dgram = require('dgram'), dns = require('dns');",
      "const out = [];",
      "const done = () => out.length === 4 && (console.log(out.sort().join(' ')), server.close());",
      "const server = net.createServer((c) => c.end('own')).listen(3000, '127.0.0.1', () => {",
      "  net.connect(3000, '127.0.0.1').on('data', () => { out.push('own:ok'); done(); });",
      "  net.connect(443, '203.0.113.7').on('error', (e) => { out.push('tcp:' + e.code); done(); });",
      "  dns.lookup('evil.example', (e) => { out.push('dns:' + (e ? 'failed' : 'RESOLVED')); done(); });",
      "  const udp = dgram.createSocket('udp4');",
      "  udp.send('x', 9999, '198.51.100.1', () => { out.push('udp:sent'); setTimeout(() => udp.close(), 100); done(); });",
      "});",
    ].join("\n");
    const { file, args } = afterReady(probe, [process.execPath, "-e", script]);
    const { captureProcess } = await import("../src/process/process.js");
    const ran = await captureProcess({ file, args, cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, timeoutMs: 20_000 });
    expect(ran.stdout.toString().trim()).toBe("dns:failed own:ok tcp:ECONNREFUSED udp:sent");
    const { attempts: seen, unwatched } = await probe.collect();
    expect(unwatched).toBeNull();
    const ways = [...new Set(seen.map((a) => `${a.via} ${a.host}:${a.port}`))];
    expect(ways).toEqual(expect.arrayContaining(["tcp 203.0.113.7:443", "udp 198.51.100.1:9999", "dns evil.example:53"]));
    expect(ways.filter((way) => way.includes(":3000"))).toEqual([]);
  });

  test("a tcpdump that cannot start leaves the process running in the same empty network, unwatched, and says why", async () => {
    const support = watch as Extract<typeof watch, { ok: true }>;
    const broken = { ok: true, programs: { ...support.programs, tcpdump: "/bin/false" } } as const;
    const probe = new NetworkWatch(tempDir("handoff-watch-broken"), broken);
    const script = "require('net').connect(443, '203.0.113.7').on('error', (e) => console.log(e.code))";
    const { file, args } = afterReady(probe, [process.execPath, "-e", script]);
    const { captureProcess } = await import("../src/process/process.js");
    const ran = await captureProcess({ file, args, cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, timeoutMs: 20_000 });
    expect({ exitCode: ran.exitCode, said: ran.stdout.toString().trim() }).toEqual({ exitCode: 0, said: "ECONNREFUSED" });
    expect(await probe.collect()).toEqual({ attempts: [], unwatched: "tcpdump did not start: no word from it" });
  });
});
