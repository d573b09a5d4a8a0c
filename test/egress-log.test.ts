import { describe, expect, test } from "vitest";
import { EgressLog } from "../src/egress/egress-log.js";
import type { HostTally } from "../src/egress/egress-record.js";
import { networkRecord } from "../src/egress/network-record.js";
import { networkHeadline } from "../src/review/network-story.js";
import type { RunResult } from "../src/verdict/result.js";

const blocked = (host: string, role: "agent" | "setup" = "agent") =>
  ({ role, label: role === "agent" ? "omp" : "npm ci", host, port: 443, via: "connect", rule: null, reason: "not_allowed" }) as const;
const model = { role: "agent", label: "omp", host: "127.0.0.1", port: 45300, via: "model", rule: "omp: its model", reason: null } as const;

function early(log: EgressLog): Record<string, boolean> {
  return Object.fromEntries(log.tallies().blocked.map((tally) => [tally.host, tally.beforeModelAnswer]));
}

describe("egress log: what the agent's CLI tried before its model first answered", () => {
  test("a host tried before any allowed connection of the agent's got an answer is its CLI's own; after the answer it is not", () => {
    const log = new EgressLog();
    log.record(blocked("catalog.example"));
    const answer = log.record(model);
    log.record(blocked("still-early.example"));
    answer.addDown(0); // a connection that got nothing back yet is no answer
    log.record(blocked("also-early.example"));
    answer.addDown(512);
    log.record(blocked("evil.example"));
    expect(early(log)).toEqual({
      "catalog.example": true,
      "still-early.example": true,
      "also-early.example": true,
      "evil.example": false,
    });
  });

  test("a host tried both before and after the answer is not its CLI's own; setup's never is", () => {
    const log = new EgressLog();
    log.record(blocked("registry.example", "setup"));
    log.record(blocked("twice.example"));
    log.record(model).addDown(10);
    log.record(blocked("twice.example"));
    expect(early(log)).toEqual({ "registry.example": false, "twice.example": false });
  });

  test("a blocked host's answer (a refusal) does not count as the model's", () => {
    const log = new EgressLog();
    log.record(blocked("first.example")).addDown(100);
    log.record(blocked("second.example"));
    expect(early(log)).toEqual({ "first.example": true, "second.example": true });
  });

  test("without a model (the command backend), nothing is the CLI's own in result.json", () => {
    const log = new EgressLog();
    log.record(blocked("evil.example"));
    const record = (agentHasModel: boolean) =>
      networkRecord({
        access: "filtered",
        sandboxed: true,
        rules: { rules: [], setupRules: [] },
        backendOutside: false,
        log,
        keys: [],
        logins: [],
        agentHasModel,
        watch: { ok: true },
      });
    expect(record(true).blocked.map((tally) => tally.beforeModelAnswer)).toEqual([true]);
    expect(record(false).blocked.map((tally) => tally.beforeModelAnswer)).toEqual([false]);
  });

  test("result.json says whether what went around the proxy was recorded, and if not why", () => {
    const facts = {
      access: "filtered",
      sandboxed: true,
      rules: { rules: [], setupRules: [] },
      backendOutside: false,
      log: new EgressLog(),
      keys: [],
      logins: [],
      agentHasModel: true,
    } as const;
    expect(networkRecord({ ...facts, watch: { ok: true } }).aroundProxy.recorded).toBe(true);
    const without = networkRecord({
      ...facts,
      watch: { ok: false, reason: "tcpdump is not installed (Debian/Ubuntu: apt-get install tcpdump)" },
    });
    expect(without.aroundProxy).toEqual({
      recorded: false,
      detail:
        "raw TCP connects, UDP datagrams and DNS queries were refused by the sandbox's empty network but not recorded: tcpdump is not installed (Debian/Ubuntu: apt-get install tcpdump)",
    });
    expect(networkRecord({ ...facts, access: "host", watch: { ok: true } }).aroundProxy.recorded).toBe(false);
    expect(networkRecord({ ...facts, sandboxed: false, watch: null }).aroundProxy.recorded).toBe(false);
  });
});

describe("the reports' network line", () => {
  const tally = (host: string, beforeModelAnswer: boolean, port = 443): HostTally => ({
    host,
    port,
    via: "connect",
    roles: ["agent"],
    labels: ["omp"],
    rule: null,
    reason: "not_allowed",
    attempts: 1,
    bytesUp: 0,
    bytesDown: 0,
    beforeModelAnswer,
  });
  const headline = (blockedHosts: HostTally[]) =>
    networkHeadline({ network: { mode: "filtered", enforced: true, reason: null, blocked: blockedHosts } } as unknown as RunResult);

  test("the hosts the agent tried after its model answered come first; its CLI's start-up calls are counted after them", () => {
    const cli = ["a", "b", "c", "d", "e", "f", "g", "h"].map((name) => tally(`${name}.catalog.example`, true));
    expect(headline([...cli, tally("evil.example", false), tally("evil.example", false, 80)])).toBe(
      "the agent tried to reach 1 host that was blocked: evil.example (port 443, 80); its CLI tried 8 more on its own before its model first answered (result.json network.blocked)",
    );
  });

  test("only start-up calls: said as the CLI's", () => {
    expect(headline([tally("registry.npmjs.org", true)])).toBe(
      "the agent's CLI tried to reach 1 host that was blocked: registry.npmjs.org (port 443) before its model first answered (result.json network.blocked)",
    );
  });

  test("a result.json written before the mark was recorded reads as the agent's", () => {
    const { beforeModelAnswer: _unrecorded, ...old } = tally("evil.example", false);
    expect(headline([old as HostTally])).toBe(
      "the agent tried to reach 1 host that was blocked: evil.example (port 443) (result.json network.blocked)",
    );
  });
});
