#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script), bundled into dist/cli/
// (scripts/bundle-cli.mjs) so that start-up reads a few files, not hundreds.
import { mkdirSync } from "node:fs";
import module from "node:module";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

// V8's compile cache, where Node has one (22.1 and later; Node 20 has none): the bundle is parsed once per version, not
// on every start. In handoff's own cache dir, which the sandbox hides from every agent. Any failure only costs speed.
if (typeof module.enableCompileCache === "function") {
  try {
    // The cache dir as src/environment/cache-store.ts finds it, 0700 like every directory in it.
    const { HANDOFF_CACHE_DIR, XDG_CACHE_HOME } = process.env;
    const cache = HANDOFF_CACHE_DIR || join(isAbsolute(XDG_CACHE_HOME ?? "") ? XDG_CACHE_HOME : join(homedir(), ".cache"), "handoff");
    const dir = join(cache, "compile");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    module.enableCompileCache(dir);
  } catch {
    // no cache this time
  }
}

const { main } = await import("../dist/cli/cli.js");

// A reader that stops early (`| head`) is its own choice, not handoff's failure: no EPIPE stack trace.
for (const stream of [process.stdout, process.stderr]) stream.on("error", () => {});

/** Resolves once everything written to the stream so far has been handed to the OS (or the stream is gone). */
function drained(stream) {
  return new Promise((resolve) => {
    if (stream.destroyed || stream.writableEnded) return resolve();
    stream.write("", () => resolve());
  });
}

// process.exit() alone drops what a pipe has not taken yet (anything past its 64 KiB buffer): wait for both streams.
main(process.argv.slice(2)).then(async (code) => {
  await Promise.all([drained(process.stdout), drained(process.stderr)]);
  process.exit(code);
});
