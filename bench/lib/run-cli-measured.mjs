// Runs the handoff CLI in this process and records this process's own peak RSS, so the benchmark measures handoff
// and not the agent it starts: `node run-cli-measured.mjs <handoff args…>`, with the compiled CLI found from
// HANDOFF_BENCH_REPO_ROOT (default: two directories up) and the result written to HANDOFF_BENCH_RSS_FILE.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repoRoot = process.env.HANDOFF_BENCH_REPO_ROOT ?? resolve(fileURLToPath(import.meta.url), "../../..");
const rssFile = process.env.HANDOFF_BENCH_RSS_FILE;
const { main } = await import(pathToFileURL(join(repoRoot, "dist/src/cli/cli.js")).href);

const exitCode = await main(process.argv.slice(2));
// maxRSS is in KiB; it covers this process only (children are not counted).
// CPU time likewise: this process's own (user + system), not its children's.
const usage = process.resourceUsage();
if (rssFile)
  writeFileSync(
    rssFile,
    JSON.stringify({ exitCode, maxRssBytes: usage.maxRSS * 1024, cpuMs: Math.round((usage.userCPUTime + usage.systemCPUTime) / 1000) }),
  );
process.exit(exitCode);
