import { createHash, randomBytes } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { RunDirectory } from "../src/run-dir/run-dir.js";
import { MIN_REDACTED_LENGTH, Redactor, envSecrets } from "../src/run-dir/redact.js";
import { runCli, commandRunArgs } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent } from "./helpers/run.js";

/** Fake credentials, assembled at run time so this file holds no token-shaped literal. */
const AWS_KEY = ["AKIA", "QWERTYUIOPASDFGH"].join("");
const A36 = "0123456789abcdefghijABCDEFGHIJ012345";
const PEM_BEGIN = ["-----BEGIN ", "RSA PRIVATE KEY-----"].join("");
const PEM_END = ["-----END ", "RSA PRIVATE KEY-----"].join("");

/** `handoff run` of the command backend with `MY_TOKEN` passed through `--env`, approved, as run id `r`. */
async function runWithToken(agentCmd: string, extra: readonly string[] = []) {
  const repo = await makeRepo(FAILING_ADD_PROJECT);
  const runsDir = join(tempDir("handoff-redact-runs"), "runs");
  const token = `tok-${randomBytes(12).toString("hex")}`;
  const outcome = await runCli(
    commandRunArgs(repo, agentCmd, ["--env", "MY_TOKEN", "--yes", "--runs-dir", runsDir, "--run-id", "r", ...extra], "fix add"),
    { env: { MY_TOKEN: token } },
  );
  return { outcome, token, runDir: join(runsDir, "r") };
}

describe("secrets the agent says aloud", () => {
  test("an --env value the agent echoes and a key it prints reach no artifact but changes.patch, nor handoff show, nor --json", async () => {
    // The second verify command prints the key into test.log.
    const run = await runWithToken(agent("fixes-add-and-echoes-its-secrets.sh"), [
      "--verify",
      "npm test",
      "--verify",
      "printf 'AKIA%s\\n' QWERTYUIOPASDFGH",
      "--json",
    ]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);

    for (const name of readdirSync(run.runDir).filter((name) => name !== "changes.patch")) {
      const text = readFileSync(join(run.runDir, name), "utf8");
      expect(text, name).not.toContain(run.token);
      expect(text, name).not.toContain(AWS_KEY);
    }
    const result = JSON.parse(readFileSync(join(run.runDir, "result.json"), "utf8"));
    expect(result.terminalReason).toBe("verified");
    expect(result.agent.finalMessage).toBe(
      "Fixed add() with [redacted: --env MY_TOKEN] and [redacted: AWS access key id]; all tests pass.",
    );
    const events = readFileSync(join(run.runDir, "events.jsonl"), "utf8");
    expect(events).toContain('"text":"using the token [redacted: --env MY_TOKEN]"');
    expect(events).toContain("Authorization: [redacted: --env MY_TOKEN]");
    expect(readFileSync(join(run.runDir, "backend-result.json"), "utf8")).toContain("found a key: [redacted: AWS access key id]");
    expect(readFileSync(join(run.runDir, "test.log"), "utf8")).toContain("[redacted: AWS access key id]");
    // What `run` prints is what result.json says.
    expect(run.outcome.stdout).toBe(readFileSync(join(run.runDir, "result.json"), "utf8"));
    expect(run.outcome.stderr).not.toContain(run.token);

    for (const format of ["text", "markdown", "json", "junit"]) {
      const shown = await runCli(["show", run.runDir, "--format", format]);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout, format).not.toContain(run.token);
      expect(shown.stdout, format).not.toContain(AWS_KEY);
    }
  });

  test("a secret the agent writes into a file stays in changes.patch: the patch is never rewritten", async () => {
    const run = await runWithToken(`${agent("fixes-add.sh")} && echo "$MY_TOKEN" > token.txt`, ["--no-verify"]);
    expect(run.outcome.code, run.outcome.stderr).toBe(0);
    const patch = readFileSync(join(run.runDir, "changes.patch"));
    expect(patch.toString("utf8")).toContain(`+${run.token}`);
    const result = JSON.parse(readFileSync(join(run.runDir, "result.json"), "utf8"));
    expect(result.patch.sha256).toBe(createHash("sha256").update(patch).digest("hex"));
  });
});

describe("Redactor", () => {
  test("replaces each --env value by its name and each scanned kind by the kind, the longest value first", () => {
    const redactor = new Redactor([
      { name: "SHORT", value: "abcd" },
      { name: "LONG", value: "abcd-efgh" },
    ]);
    expect(redactor.text(`x abcd-efgh y abcd z ${AWS_KEY}.`)).toBe(
      "x [redacted: --env LONG] y [redacted: --env SHORT] z [redacted: AWS access key id].",
    );
  });

  test.each([
    ["AWS access key id", AWS_KEY],
    ["GitHub token", ["ghp_", A36].join("")],
    ["Anthropic API key", ["sk-ant-", "api03-", "abcdefghijklmnopqrstuvwxyz012345"].join("")],
    ["OpenAI API key", ["sk-", "proj-", "abcdefghijklmnopqrstuvwxyz0123456789"].join("")],
    ["Slack token", ["xox", "b-", "1234567890-abcdefghij"].join("")],
    ["Google API key", ["AIza", "SyA-abcdefghijklmnopqrstuvwxyz01234"].join("")],
    ["Stripe live key", ["sk_", "live_", "abcdefghijklmnopqrstuvwx"].join("")],
    ["npm token", ["npm_", A36].join("")],
  ])("a %s the scanner knows is named by its own marker", (kind, secret) => {
    expect(new Redactor().text(`before ${secret} after`)).toBe(`before [redacted: ${kind}] after`);
  });

  test(`an --env value under ${MIN_REDACTED_LENGTH} characters, one that names an existing path, and an unset one are not redacted`, () => {
    const dir = tempDir("handoff-redact-place");
    const secrets = envSecrets(["SHORT", "PLACE", "UNSET", "TOKEN", "TOKEN"], { SHORT: "yes", PLACE: dir, TOKEN: "s3cret-value" });
    expect(secrets).toEqual([{ name: "TOKEN", value: "s3cret-value" }]);
  });

  test("a private key loses its whole block, not only its first line, also when its END line is missing", () => {
    const redactor = new Redactor();
    expect(redactor.text(`before\n${PEM_BEGIN}\nMIIEpAIBAAKCAQEA+/=\nabcdef\n${PEM_END}\nafter`)).toBe(
      "before\n[redacted: private key block]\nafter",
    );
    expect(redactor.text(`cut ${PEM_BEGIN}\nMIIEpAIBAAKCAQEA\nabcdef`)).toBe("cut [redacted: private key block]");
  });

  test("a 70 KB --env value is redacted too, not a crash on a regular expression too large to build", () => {
    const value = "b".repeat(70_000);
    const redactor = new Redactor([{ name: "HUGE_VALUE", value }]);
    expect(redactor.text(`x${value}y`)).toBe("x[redacted: --env HUGE_VALUE]y");
    expect(redactor.bytes(Buffer.from(`x${value}y`)).toString()).toBe("x[redacted: --env HUGE_VALUE]y");
  });

  test("bytes that are not UTF-8 around a secret stay as they were", () => {
    const redactor = new Redactor([{ name: "TOKEN", value: "s3cret-välue" }]);
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("s3cret-välue"), Buffer.from([0x80])]);
    expect(redactor.bytes(bytes)).toEqual(
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("[redacted: --env TOKEN]"), Buffer.from([0x80])]),
    );
  });

  test("a JSON value with nothing to redact is returned as it is, not copied", () => {
    const value = { a: ["x", { b: "y" }], n: 1 };
    expect(new Redactor([{ name: "TOKEN", value: "s3cret-value" }]).json(value)).toBe(value);
  });

  test("a JSON value with a secret deep inside is copied where it changed and shared where it did not; keys are redacted too and `__proto__` stays a plain key", () => {
    const redactor = new Redactor([{ name: "TOKEN", value: "s3cret-value" }]);
    const untouched = { keep: "me" };
    const value = JSON.parse(
      '{"__proto__":{"x":"s3cret-value"},"list":["a",{"k":"s3cret-value"},"b"],"same":{"keep":"me"},"s3cret-value":1,"n":null}',
    );
    value.same = untouched;
    const redacted = redactor.json(value);
    expect(redacted).not.toBe(value);
    expect(Object.getPrototypeOf(redacted)).toBe(Object.prototype);
    expect(Object.keys(redacted)).toEqual(["__proto__", "list", "same", "[redacted: --env TOKEN]", "n"]);
    expect(Object.getOwnPropertyDescriptor(redacted, "__proto__")?.value).toEqual({ x: "[redacted: --env TOKEN]" });
    expect(redacted.list).toEqual(["a", { k: "[redacted: --env TOKEN]" }, "b"]);
    expect(redacted.same).toBe(untouched);
    expect(value.list[1]).toEqual({ k: "s3cret-value" }); // the input is left as it was
  });

  test("verbatim keys keep their values exact, at the top level only", () => {
    const redactor = new Redactor([{ name: "TOKEN", value: "s3cret-value" }]);
    const value = { runDir: "/runs/s3cret-value", nested: { runDir: "/runs/s3cret-value" } };
    expect(redactor.json(value, ["runDir"])).toEqual({ runDir: "/runs/s3cret-value", nested: { runDir: "/runs/[redacted: --env TOKEN]" } });
  });

  test("result.json keeps its locators exact: an --env value inside the repository's path leaves repo.path, runDir and the patch's paths as they are", () => {
    const runsDir = join(tempDir("handoff-redact-dir"), "runs");
    const dir = RunDirectory.create(runsDir, "r", new Redactor([{ name: "PROJECT", value: "myproject" }]));
    const result = {
      runId: "r",
      runDir: `/home/me/myproject/runs/r`,
      summary: "the agent worked on myproject",
      repo: { path: "/home/me/myproject", baseCommit: "abc" },
      patch: { sha256: "0", files: [{ path: "myproject.txt" }] },
      workspace: "/tmp/myproject-ws",
    };
    expect(dir.redacted("result.json", result)).toEqual({ ...result, summary: "the agent worked on [redacted: --env PROJECT]" });
    // handoff's own records are not the agent's words: written as given.
    expect(dir.redacted("request.json", result)).toBe(result);
    dir.close();
  });
});
