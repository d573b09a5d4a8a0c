import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { QUEUE_PACKAGES } from "../src/queue/load-queue.js";
import { jsonSchemas } from "../src/run-dir/json-schemas.js";
import { tempDir } from "./helpers/repo.js";

// What `npm install agent-handoff` gets: the files, the manifest, and what importing it loads. Run after `npm run build`.

const ROOT = join(import.meta.dirname, "..");
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
const QUEUE_MODULES = /\/node_modules\/(bullmq|ioredis|msgpackr[^/]*)\//;

/** Each module from node_modules a Node process loads, one `LOAD <url>` line on stderr. */
const traceLoads = `data:text/javascript,${encodeURIComponent(`
  import { register } from "node:module";
  register("data:text/javascript," + encodeURIComponent(\`export async function load(url, context, next) {
    if (url.includes("/node_modules/")) process.stderr.write("LOAD " + url + "\\\\n");
    return next(url, context);
  }\`));`)}`;

function node(args: readonly string[], cwd = ROOT) {
  return spawnSync(process.execPath, args, { cwd, encoding: "utf8", env: { ...process.env, HANDOFF_REDIS_RETRY_SECONDS: "1" } });
}

/** An install of the package without its optional peers: dist/, bin/ and every dependency but bullmq and ioredis. */
function installWithoutQueue(): string {
  const dir = tempDir("handoff-package");
  for (const part of ["dist", "bin", "sandbox", "package.json"]) cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  mkdirSync(join(dir, "node_modules"));
  for (const name of readdirSync(join(ROOT, "node_modules")))
    if (!(name in QUEUE_PACKAGES) && !name.startsWith(".")) symlinkSync(join(ROOT, "node_modules", name), join(dir, "node_modules", name));
  return dir;
}

describe("npm pack", () => {
  const packed = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: ROOT, encoding: "utf8" });
  const files: string[] = packed.status === 0 ? JSON.parse(packed.stdout)[0].files.map((file: { path: string }) => file.path) : [];

  test("ships the build, the launcher, the sandbox's forwarder, the JSON Schemas, the README and the licence; no map, source or test", () => {
    expect(packed.status, packed.stderr).toBe(0);
    expect(files).toEqual(expect.arrayContaining(["bin/handoff.js", "sandbox/forwarder.mjs", "README.md", "LICENSE", "package.json"]));
    expect(files).toEqual(expect.arrayContaining(["dist/src/index.js", "dist/src/index.d.ts", "dist/src/queue/index.js"]));
    expect(files).toEqual(expect.arrayContaining(Object.keys(jsonSchemas()).map((file) => `schemas/${file}`)));
    expect(files.filter((file) => file.endsWith(".map"))).toEqual([]);
    expect(files.filter((file) => /^(src|test|backends|scripted-model)\//.test(file) || file.startsWith("dist/test/"))).toEqual([]);
    // The Action runs from a clone; the scripted model serves the tests and the demo.
    expect(files.filter((file) => file.startsWith("dist/src/action/") || file.startsWith("dist/scripted-model/"))).toEqual([]);
  });

  test("the shipped JSON Schemas are the ones the zod schemas generate", () => {
    for (const [file, schema] of Object.entries(jsonSchemas()))
      expect(JSON.parse(readFileSync(join(ROOT, "schemas", file), "utf8")), file).toEqual(schema);
  });
});

describe("package.json", () => {
  test("names the repository, its home page and where to report a bug, so the registry page links work", () => {
    expect(manifest.repository).toEqual({ type: "git", url: "git+https://github.com/agent-handoff/handoff.git" });
    expect(manifest.homepage).toBe("https://github.com/agent-handoff/handoff#readme");
    expect(manifest.bugs).toEqual({ url: "https://github.com/agent-handoff/handoff/issues" });
  });

  test("the README's relative links name files of the repository (the registry page resolves them against `repository`)", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const targets = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((match) => match[1]!).filter((href) => !/^[a-z]+:/.test(href));
    expect(targets.length).toBeGreaterThan(10);
    for (const target of targets) expect(existsSync(join(ROOT, target)), target).toBe(true);
  });

  test("the queue's packages are optional peers, installed for the tests at the versions the one-line hint names", () => {
    for (const [name, version] of Object.entries(QUEUE_PACKAGES)) {
      expect(manifest.dependencies[name], name).toBeUndefined();
      expect(manifest.peerDependenciesMeta[name], name).toEqual({ optional: true });
      expect(manifest.peerDependencies[name], name).toBe(`^${version}`);
      expect(manifest.devDependencies[name], name).toBe(version);
    }
  });
});

describe("the queue is loaded only where it is used", () => {
  test("import 'agent-handoff' and the plain commands load no bullmq, ioredis or msgpackr", () => {
    const library = node([
      "--import",
      traceLoads,
      "--input-type=module",
      "-e",
      `await import(${JSON.stringify(join(ROOT, "dist/src/index.js"))});`,
    ]);
    expect(library.status, library.stderr).toBe(0);
    expect(library.stderr).toContain("/node_modules/zod/");
    expect(library.stderr).not.toMatch(QUEUE_MODULES);
    for (const args of [["--help"], ["batch", "--help"], ["run", "--backend", "codx", "--no-verify", "--yes", "--", "t"]]) {
      const command = node(["--import", traceLoads, join(ROOT, "bin/handoff.js"), ...args], tempDir());
      expect(command.stderr, args.join(" ")).not.toMatch(QUEUE_MODULES);
    }
  });

  test("without bullmq and ioredis installed, the library imports, and `handoff worker` says in one line what to install", () => {
    const dir = installWithoutQueue();
    writeFileSync(
      join(dir, "probe.mjs"),
      'const handoff = await import("./dist/src/index.js");\nconsole.log(typeof handoff.ExternalCodingRunner);\n',
    );
    const library = node([join(dir, "probe.mjs")], dir);
    expect(library.stdout.trim(), library.stderr).toBe("function");
    const worker = node([join(dir, "bin/handoff.js"), "worker", "--redis", "redis://127.0.0.1:1"], dir);
    expect(worker.status).toBe(69);
    expect(worker.stderr).toBe(
      "handoff: the queue needs bullmq, which is not installed (an optional peer dependency of agent-handoff): npm install bullmq@6.7.0 ioredis@6.0.0\n",
    );
    writeFileSync(join(dir, "tasks.jsonl"), '{"task": "t"}\n');
    const batch = node([join(dir, "bin/handoff.js"), "batch", "tasks.jsonl", "--redis", "redis://127.0.0.1:1", "--yes"], dir);
    expect(batch.status).toBe(69);
    expect(batch.stderr).toMatch(/^handoff: the queue needs bullmq, .*: npm install bullmq@6\.7\.0 ioredis@6\.0\.0\n$/);
  });
});
