import { type LoadedRun, readRunFile } from "../../run-dir/run-lookup.js";
import type { RunResult } from "../../verdict/result.js";
import { commandEnding, commandPassed } from "../../verify/shell-commands.js";
import { ms } from "../format.js";
import { type Html, html } from "./escape.js";

/** test.log is read up to this size (each command keeps at most 512 KiB of output in it). */
export const MAX_TEST_LOG_BYTES = 32 * 1024 * 1024;
/** Bytes of a command's output shown: its start and, where failures usually are, its end. */
const HEAD_BYTES = 2 * 1024;
const TAIL_BYTES = 6 * 1024;

type CommandEntry = RunResult["verification"]["commands"][number];

/**
 * Each command's section of test.log (`$ <command>    [<phase>]` up to the next section), matched from the end:
 * with several attempts test.log holds every attempt's, and result.json's commands are the last ones that ran.
 */
function sections(log: Buffer, commands: readonly CommandEntry[]): (Buffer | null)[] {
  const found: (Buffer | null)[] = commands.map(() => null);
  let end = log.length;
  for (let i = commands.length - 1; i >= 0 && end > 0; i--) {
    const c = commands[i]!;
    const header = Buffer.from(`$ ${c.command}    [${c.phase ?? "verify"}]\n`);
    const at = log.lastIndexOf(header, end - 1);
    if (at === -1) continue;
    found[i] = log.subarray(at + header.length, end);
    end = at;
  }
  return found;
}

function excerpt(output: Buffer): { text: string; leftOut: number } {
  if (output.length <= HEAD_BYTES + TAIL_BYTES) return { text: output.toString("utf8"), leftOut: 0 };
  const head = output.subarray(0, HEAD_BYTES).toString("utf8");
  const tail = output.subarray(output.length - TAIL_BYTES).toString("utf8");
  const leftOut = output.length - HEAD_BYTES - TAIL_BYTES;
  return { text: `${head}\n… ${leftOut} bytes left out here …\n${tail}`, leftOut };
}

/**
 * Every setup and verify command handoff ran, how it ended, and a bounded excerpt of its output from test.log
 * (`<folder>test.log`: a candidates run's is its winner's, in `candidates/<k>/`).
 */
export function verificationView(run: LoadedRun, folder: string): Html {
  const v = run.result.verification;
  const state =
    v.skipped === "no_verify"
      ? html`<p class="bad-text"><b>Nothing was checked</b> (--no-verify): no verification command ran on this patch.</p>`
      : !v.ran
        ? html`<p class="muted">Verification did not run.</p>`
        : v.passed
          ? html`<p class="ok-text"><b>Passed</b>: every command handoff ran on the patched checkout succeeded.</p>`
          : html`<p class="bad-text"><b>Failed</b>.</p>`;
  if (v.commands.length === 0) return state;
  const read = readRunFile(run, `${folder}test.log`, MAX_TEST_LOG_BYTES);
  const outputs = read.kind === "bytes" ? sections(read.bytes, v.commands) : v.commands.map(() => null);
  const unread =
    read.kind === "bytes"
      ? null
      : read.kind === "too_large"
        ? `test.log is ${read.size} bytes, more than the report reads`
        : read.kind === "untrusted"
          ? `test.log was not read: ${read.why}`
          : read.kind === "missing"
            ? "the run directory has no test.log"
            : `test.log cannot be read (${read.message})`;
  return html`${state}${unread ? html`<p class="muted">${unread}.</p>` : null}${v.commands.map((c, i) => {
    const passed = commandPassed(c);
    const output = outputs[i];
    const shown = output ? excerpt(output) : null;
    return html`<details class="command ${passed ? "ok" : "bad"}"${passed ? null : html` open`}><summary><span class="mark">${passed ? "ok" : "FAIL"}</span> <span class="muted">[${c.phase ?? "verify"}]</span> <code>${c.command}</code>: ${commandEnding(c)}, ${ms(c.durationMs)}</summary>${
      shown ? html`<pre class="log">${shown.text}</pre>` : html`<p class="muted">No output found in test.log.</p>`
    }</details>`;
  })}`;
}
