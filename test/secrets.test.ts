import { describe, expect, test } from "vitest";
import { findSecrets } from "../src/patch/rules/secrets.js";

/** Fake credentials, assembled at run time so this file holds no token-shaped literal. */
const fake = (...parts: string[]) => parts.join("");
const A36 = "0123456789abcdefghijABCDEFGHIJ012345";

const kindsIn = (line: string) => findSecrets([line], [1]).map((hit) => hit.kind);

describe("findSecrets", () => {
  test.each([
    ["private key block", fake("-----BEGIN ", "RSA PRIVATE KEY-----")],
    ["private key block", fake("-----BEGIN ", "OPENSSH PRIVATE KEY-----")],
    ["private key block", fake("-----BEGIN ", "ENCRYPTED PRIVATE KEY-----")],
    ["private key block", fake("-----BEGIN ", "PGP PRIVATE KEY BLOCK-----")],
    ["private key block", fake("-----BEGIN ", "PRIVATE KEY-----")],
    ["AWS access key id", fake('key = "AKIA', "QWERTYUIOPASDFGH", '"')],
    ["AWS access key id", fake("ASIA", "QWERTYUIOPASDFGH")],
    ["GitHub token", fake("ghp_", A36)],
    ["GitHub token", fake("gho_", A36)],
    ["GitHub token", fake("ghs_", A36)],
    ["GitHub token", fake("github_pat_", "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz")],
    ["Anthropic API key", fake("sk-ant-", "api03-", "abcdefghijklmnopqrstuvwxyz012345")],
    ["OpenAI API key", fake("sk-", "proj-", "abcdefghijklmnopqrstuvwxyz0123456789")],
    ["OpenAI API key", fake("sk-", "abcdefghijklmnopqrstuvwxyz0123456789AB")],
    ["Slack token", fake("xox", "b-", "1234567890-abcdefghij")],
    ["Google API key", fake("AIza", "SyA-abcdefghijklmnopqrstuvwxyz01234")],
    ["Google API key", fake('"AIza', "SyAabcdefghijklmnopqrstuvwxyz01234-", '"')],
    ["Stripe live key", fake("sk_", "live_", "abcdefghijklmnopqrstuvwx")],
    ["Stripe live key", fake("rk_", "live_", "abcdefghijklmnopqrstuvwx")],
    ["npm token", fake("npm_", A36)],
  ])("finds a %s", (kind, line) => {
    expect(kindsIn(line)).toEqual([kind]);
  });

  test.each([
    "const key = process.env.AWS_ACCESS_KEY_ID;",
    "-----BEGIN PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    fake("AKIA", "SHORT"),
    fake("AKIA", "qwertyuiopasdfgh"), // lower case is no AWS key id
    fake("ghp_", "tooshort"),
    fake("sk-", "short"),
    fake("sk_", "test_", "abcdefghijklmnopqrstuvwx"), // Stripe test keys are not live credentials
    fake("AIza", "tooShort"),
    fake("AIza", "SyAabcdefghijklmnopqrstuvwxyz012345678"), // too long: part of something else
    "task-ant-abcdefghijklmnopqrstuvwxyz", // no word boundary before sk-
    "export function add(a, b) { return a + b; }",
  ])("ignores %j", (line) => {
    expect(kindsIn(line)).toEqual([]);
  });

  test("an Anthropic key is reported once, as Anthropic, not also as OpenAI", () => {
    expect(kindsIn(fake("ANTHROPIC_API_KEY=sk-ant-", "api03-", "abcdefghijklmnopqrstuvwxyz0123456789_-abcdef"))).toEqual([
      "Anthropic API key",
    ]);
  });

  test("hits carry the file line numbers given for each line, and two secrets on one line are two hits", () => {
    const lines = ["fine", fake("a=AKIA", "QWERTYUIOPASDFGH b=ghp_", A36), "fine too"];
    expect(findSecrets(lines, [10, 42, 43])).toEqual([
      { kind: "AWS access key id", line: 42 },
      { kind: "GitHub token", line: 42 },
    ]);
  });

  test("without line numbers, lines count from 1", () => {
    expect(findSecrets(["x", fake("npm_", A36)], [])).toEqual([{ kind: "npm token", line: 2 }]);
  });

  test("a hit names the kind and the line, never the value", () => {
    const secret = fake("ghp_", A36);
    const hits = findSecrets([`token = "${secret}"`], [7]);
    expect(JSON.stringify(hits)).not.toContain(secret.slice(4));
    expect(Object.keys(hits[0]!).sort()).toEqual(["kind", "line"]);
  });
});
