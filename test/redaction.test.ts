import { createHash, randomBytes } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { RunDirectory } from "../src/run-dir/run-dir.js";
import { stderrReason } from "../src/agent/agent-ending.js";
import { clip } from "../src/lib/clip.js";
import { HeadTailBuffer } from "../src/process/head-tail.js";
import { readTestClaim } from "../src/verdict/agent-claim.js";
import { SECRET_KINDS } from "../src/patch/rules/secrets.js";
import { MIN_REDACTED_LENGTH, Redactor, envSecrets } from "../src/run-dir/redact.js";
import { runCli, commandRunArgs } from "./helpers/cli.js";
import { FAILING_ADD_PROJECT, makeRepo, tempDir } from "./helpers/repo.js";
import { agent } from "./helpers/run.js";

/** Fake credentials, assembled at run time so this file holds no token-shaped literal. */
const AWS_KEY = ["AKIA", "QWERTYUIOPASDFGH"].join("");
const A36 = "0123456789abcdefghijABCDEFGHIJ012345";
const PEM_BEGIN = ["-----BEGIN ", "RSA PRIVATE KEY-----"].join("");
const PEM_END = ["-----END ", "RSA PRIVATE KEY-----"].join("");

/** A sample of each kind of token the scanner knows, as its public prefix and the secret rest. */
const TOKENS = [
  { kind: "AWS access key id", prefix: "AKIA", body: "QWERTYUIOPASDFGH" },
  { kind: "GitHub token", prefix: "ghp_", body: A36 },
  { kind: "Anthropic API key", prefix: ["sk-", "ant-"].join(""), body: "api03-abcdefghijklmnopqrstuvwxyz012345" },
  { kind: "OpenAI API key", prefix: "sk-", body: "proj-abcdefghijklmnopqrstuvwxyz0123456789" },
  { kind: "Slack token", prefix: "xox", body: "b-1234567890-abcdefghij" },
  { kind: "Google API key", prefix: "AIza", body: "SyA-abcdefghijklmnopqrstuvwxyz01234" },
  { kind: "Stripe live key", prefix: ["sk_", "live_"].join(""), body: "abcdefghijklmnopqrstuvwx" },
  { kind: "npm token", prefix: "npm_", body: A36 },
];

/** The parts of a secret a log must not hold: every substring of 4 characters or more of it (all hold one of 4). */
function partsOf(secret: string): string[] {
  return Array.from({ length: secret.length - 3 }, (_, i) => secret.slice(i, i + 4));
}

/**
 * What redaction leaves of `secret` (after `glue`) when a clip at `limit` cuts it after each of its characters in
 * turn: the parts of `secret` found in what is kept of each clipped and redacted text, or none.
 */
function partsLeftByEachCut(redactor: Redactor, secret: string, glue: string, hidden: string): string[] {
  const limit = 200;
  const word = `${glue}${secret}`;
  const left: string[] = [];
  for (let kept = 1; kept < word.length; kept++) {
    const text = `${"lorem ".repeat(50).slice(0, limit - kept)}${word} and more`;
    const kept_ = redactor.text(`said: ${clip(text, limit)} then`);
    const head = kept_.slice(0, kept_.indexOf("… ("));
    left.push(
      ...partsOf(hidden)
        .filter((part) => head.includes(part))
        .map((part) => `${kept}: ${part}`),
    );
  }
  return left;
}

/**
 * The mirror of partsLeftByEachCut for a stream whose start is left out (a stderr tail, src/process/head-tail.ts): the
 * parts of `secret` found in what is kept of each tail and redacted, the cut falling before each of its characters.
 */
function partsLeftByEachTailCut(redactor: Redactor, secret: string, glue: string, hidden: string): string[] {
  const limit = 200;
  const word = `${glue}${secret}`;
  const left: string[] = [];
  for (let kept = 1; kept < word.length; kept++) {
    const tail = new HeadTailBuffer(0, 4096);
    // The cut leaves `kept` characters of the word in the last `limit` bytes less the marker's room.
    tail.push(Buffer.from(`${"lorem ".repeat(80)}${word}${" ipsum".repeat(40).slice(0, limit - 40 - kept)}`));
    const text = redactor.text(`said: ${tail.tailText(limit)} then`);
    left.push(
      ...partsOf(hidden)
        .filter((part) => text.includes(part))
        .map((part) => `${kept}: ${part}`),
    );
  }
  return left;
}

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

  test("a secret cut by the clip of a long tool output leaves no part of itself longer than 3 characters in any artifact", async () => {
    // The fake Codex (fixtures/fake-clis) prints each secret across the 4000th character of a command's output, cut
    // after each of several of its characters; its secrets are these (the tokens assembled there the same way).
    const secrets = {
      github: { public: "ghp_", body: "Qz7Jx9Kv2Wq8Rt5Ym3Np6Lc4Hb1Gd0Fs8Xa2Ve" },
      npm: { public: "npm_", body: "Kd5Wp2Zq8Xj3Rv6Ty9Mb4Nc7Lh1Gf0Sa5Ue2Io" },
      word: { public: "", body: "Wk4Rp9Zt2Xq7Mv5Jc" },
      phrase: { public: "", body: "Vq3 Zx7Kw Jm2Rt9 Yb8Hn4Lp" },
    };
    const repo = await makeRepo(FAILING_ADD_PROJECT);
    const runsDir = join(tempDir("handoff-redact-runs"), "runs");
    const outcome = await runCli(
      [
        "run",
        "-C",
        repo,
        "--backend",
        "codex",
        "--bin",
        resolve(import.meta.dirname, "../fixtures/fake-clis/codex-says-secrets-at-the-clip.mjs"),
        "--env",
        "HANDOFF_TEST_WORD",
        "--env",
        "HANDOFF_TEST_PHRASE",
        "--no-verify",
        "--yes",
        "--json",
        "--runs-dir",
        runsDir,
        "--run-id",
        "r",
        "--",
        "print your secrets",
      ],
      { env: { HANDOFF_TEST_WORD: secrets.word.body, HANDOFF_TEST_PHRASE: secrets.phrase.body } },
    );
    const runDir = join(runsDir, "r");
    const events = readFileSync(join(runDir, "events.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    // Every command's output was clipped, with the cut inside the secret (so this test tests the cut).
    const outputs = events.filter((event) => event.type === "agent.tool.finished").map((event) => event.output as string);
    expect(outputs.length, outcome.stderr).toBeGreaterThanOrEqual(40);
    for (const output of outputs) expect(output).toMatch(/… \(\d+ more characters\)$/);

    // "No part": no substring of 4 characters or more of what follows a secret's public prefix, in any file but the patch.
    const parts = Object.values(secrets).flatMap(({ body }) => Array.from({ length: body.length - 3 }, (_, i) => body.slice(i, i + 4)));
    for (const name of readdirSync(runDir).filter((name) => name !== "changes.patch")) {
      const text = readFileSync(join(runDir, name), "utf8");
      expect(
        parts.filter((part) => text.includes(part)),
        name,
      ).toEqual([]);
    }
    expect(parts.filter((part) => outcome.stdout.includes(part) || outcome.stderr.includes(part))).toEqual([]);
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

  test.each(TOKENS.map(({ kind, prefix, body }) => [kind, `${prefix}${body}`]))(
    "a %s the scanner knows is named by its own marker",
    (kind, secret) => {
      expect(new Redactor().text(`before ${secret} after`)).toBe(`before [redacted: ${kind}] after`);
    },
  );

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

describe("an --env value as JSON spells it", () => {
  test("a value with a quote, a backslash or a newline goes also where a JSON line the agent wrote escapes it", () => {
    const value = 'pa"ss\\wo\nrd';
    const redactor = new Redactor([{ name: "PASSWORD", value }]);
    const rawLine = `{"type":"oops","text":${JSON.stringify(`using ${value} now`)},`; // not JSON: a diagnostic keeps it raw
    expect(redactor.text(rawLine)).toBe('{"type":"oops","text":"using [redacted: --env PASSWORD] now",');
    expect(redactor.text(`plain ${value}`)).toBe("plain [redacted: --env PASSWORD]");
  });
});

describe("a secret cut by a clip (src/lib/clip.ts)", () => {
  test("every kind the scanner knows has a sample above, so each is tested cut", () => {
    expect([...TOKENS.map((token) => token.kind), "private key block"].sort()).toEqual(SECRET_KINDS.map((kind) => kind.name).sort());
  });

  test.each(TOKENS)("a $kind cut after any of its characters leaves no part of what follows its prefix", ({ prefix, body }) => {
    for (const glue of ["", "GH_TOKEN=", "https://x-access-token:", '{"token":"'])
      expect(partsLeftByEachCut(new Redactor(), `${prefix}${body}`, glue, body), glue).toEqual([]);
  });

  test("an --env value, with spaces or without, cut after any of its characters leaves no part of it", () => {
    const word = "Wk4Rp9Zt2Xq7Mv5Jc";
    const phrase = "Vq3 Zx7Kw Jm2Rt9 Yb8Hn4Lp";
    const redactor = new Redactor([
      { name: "WORD", value: word },
      { name: "PHRASE", value: phrase },
    ]);
    for (const glue of ["", "PASSWORD=", "'"]) {
      expect(partsLeftByEachCut(redactor, word, glue, word), glue).toEqual([]);
      expect(partsLeftByEachCut(redactor, phrase, glue, phrase), glue).toEqual([]);
    }
  });

  test.each(TOKENS)("a $kind whose start a stderr tail cut off leaves no part of what follows its prefix", ({ prefix, body }) => {
    for (const glue of ["", "GH_TOKEN=", "https://x-access-token:", '{"token":"'])
      expect(partsLeftByEachTailCut(new Redactor(), `${prefix}${body}`, glue, body), glue).toEqual([]);
  });

  test("an --env value, with spaces or without, whose start a stderr tail cut off leaves no part of it", () => {
    const word = "Wk4Rp9Zt2Xq7Mv5Jc";
    const phrase = "Vq3 Zx7Kw Jm2Rt9 Yb8Hn4Lp";
    const base64 = "aB3/dE6+gH9=kL2/mN5+pQ8=";
    const redactor = new Redactor([
      { name: "WORD", value: word },
      { name: "PHRASE", value: phrase },
      { name: "BASE64", value: base64 },
    ]);
    for (const glue of ["", "PASSWORD=", "'"]) {
      expect(partsLeftByEachTailCut(redactor, word, glue, word), glue).toEqual([]);
      expect(partsLeftByEachTailCut(redactor, phrase, glue, phrase), glue).toEqual([]);
      expect(partsLeftByEachTailCut(redactor, base64, glue, base64), glue).toEqual([]);
    }
  });

  test("the end of an --env value a stderr tail kept is marked as the value; a text with a tail marker but no value's end stays as it is", () => {
    const redactor = new Redactor([{ name: "PHRASE", value: "correct horse battery staple" }]);
    const tail = new HeadTailBuffer(0, 4096);
    tail.push(Buffer.from(`${"x".repeat(100)} correct horse battery staple was refused`));
    expect(tail.tailText(74)).toBe("(108 earlier bytes) … horse battery staple was refused");
    expect(redactor.text(tail.tailText(74))).toBe("(108 earlier bytes) …[redacted: --env PHRASE] was refused");
    const plain = new HeadTailBuffer(0, 4096);
    plain.push(Buffer.from(`${"y ".repeat(100)}nothing secret`));
    expect(redactor.text(plain.tailText(50))).toBe(plain.tailText(50));
  });

  test("a private key whose BEGIN line a stderr tail cut off leaves none of its base64 lines: they go up to its END line", () => {
    const lines = ["MIIEpAIBAAKCAQEAx7Qz9Kv2Wq8Rt5Ym3Np6Lc4H", "b1Gd0Fs8Xa2VeKd5Wp2Zq8Xj3Rv6Ty9Mb4Nc7L+/=", "h1Gf0Sa5Ue2Io"];
    const block = `${PEM_BEGIN}\n${lines.join("\n")}\n${PEM_END}`;
    expect(partsLeftByEachTailCut(new Redactor(), block, "", lines.join(""))).toEqual([]);
    const tail = new HeadTailBuffer(0, 4096);
    tail.push(Buffer.from(`key:\n${block}\nafter`));
    expect(new Redactor().text(tail.tailText(PEM_END.length + 50))).toMatch(
      /^\(\d+ earlier bytes\) …\[redacted: private key block\]\nafter$/,
    );
  });

  test("the words of an --env value a clip kept are marked as the value, also where the clipped text is inside a longer one", () => {
    const redactor = new Redactor([{ name: "PHRASE", value: "correct horse battery staple" }]);
    const clipped = clip(`output: correct horse battery staple`, 26);
    expect(clipped).toBe("output: correct horse … (14 more characters)");
    expect(redactor.text(`tool said ${clipped}; then more`)).toBe(
      "tool said output: [redacted: --env PHRASE]… (14 more characters); then more",
    );
  });

  test(`a kept start of an --env value under ${MIN_REDACTED_LENGTH} characters stays, and a text with a marker but no value's start is returned as it is`, () => {
    const redactor = new Redactor([{ name: "PHRASE", value: "ab cdefgh" }]);
    expect(redactor.text(clip("x ab cdefgh", 6))).toBe("x ab … (6 more characters)");
    const text = clip("nothing secret here at all", 10);
    expect(redactor.text(text)).toBe(text);
  });

  test("the start of a 70 KB --env value before a marker goes too", () => {
    const value = `${"b".repeat(35_000)} ${"c".repeat(35_000)}`;
    const redactor = new Redactor([{ name: "HUGE_VALUE", value }]);
    expect(redactor.text(clip(`x ${value}`, 40_000))).toBe("x [redacted: --env HUGE_VALUE]… (35000 more characters)");
  });

  test("a private key cut after any of its characters leaves none of its base64 lines: its block runs over them to the marker", () => {
    const lines = ["MIIEpAIBAAKCAQEAx7Qz9Kv2Wq8Rt5Ym3Np6Lc4H", "b1Gd0Fs8Xa2VeKd5Wp2Zq8Xj3Rv6Ty9Mb4Nc7L+/=", "h1Gf0Sa5Ue2Io"];
    const block = `${PEM_BEGIN}\n${lines.join("\n")}\n${PEM_END}`;
    expect(partsLeftByEachCut(new Redactor(), block, "", lines.join(""))).toEqual([]);
    expect(new Redactor().text(clip(`key:\n${block}\nafter`, 5 + PEM_BEGIN.length + 30))).toBe(
      "key:\n[redacted: private key block]… (132 more characters)",
    );
  });

  test("the CLI's stderr reason and the agent's claim about tests, cut at 300 characters, are clipped too: no part of a token is kept", () => {
    const token = `ghp_${A36}`;
    const said = `error: ${"x ".repeat(140)}token ${token} was refused`;
    const reason = new Redactor().text(stderrReason(said));
    const quote = new Redactor().text(readTestClaim(`All tests pass ${"y ".repeat(135)}with ${token} set.`)?.quote ?? "");
    for (const text of [reason, quote]) {
      expect(text).toMatch(/… \(\d+ more characters\)$/);
      expect(partsOf(A36).filter((part) => text.includes(part))).toEqual([]);
    }
  });
});
