#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import { main } from "../dist/src/cli/cli.js";

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
