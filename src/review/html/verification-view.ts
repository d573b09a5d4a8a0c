import type { LoadedRun } from "../../run-dir/run-lookup.js";
import { commandOutput, readTestLog } from "../command-output.js";
import { commandEnding, commandPassed, verificationCommands } from "../../verify/shell-commands.js";
import { ms } from "../format.js";
import { type Html, html } from "./escape.js";

/** Bytes of a command's output shown: its start and, where failures usually are, its end. */
const HEAD_BYTES = 2 * 1024;
const TAIL_BYTES = 6 * 1024;

function excerpt(output: Buffer): { text: string; leftOut: number } {
  if (output.length <= HEAD_BYTES + TAIL_BYTES) return { text: output.toString("utf8"), leftOut: 0 };
  const head = output.subarray(0, HEAD_BYTES).toString("utf8");
  const tail = output.subarray(output.length - TAIL_BYTES).toString("utf8");
  const leftOut = output.length - HEAD_BYTES - TAIL_BYTES;
  return { text: `${head}\n… ${leftOut} bytes left out here …\n${tail}`, leftOut };
}

/**
 * Every setup and verify command handoff ran (those of the run held to the base too), how it ended, and a bounded
 * excerpt of its output from test.log (readTestLog: a candidates run's is its winner's, in `candidates/<k>/`).
 */
export function verificationView(run: LoadedRun): Html {
  const v = run.result.verification;
  const state =
    v.skipped === "no_verify"
      ? html`<p class="bad-text"><b>Nothing was checked</b> (--no-verify): no verification command ran on this patch.</p>`
      : !v.ran
        ? html`<p class="muted">Verification did not run.</p>`
        : v.passed
          ? html`<p class="ok-text"><b>Passed</b>: every command handoff ran on the patched checkout succeeded.</p>`
          : html`<p class="bad-text"><b>Failed</b>.</p>`;
  const commands = verificationCommands(v);
  if (commands.length === 0) return state;
  const log = readTestLog(run);
  const unread = log.kind === "unavailable" ? log.why : null;
  return html`${state}${unread ? html`<p class="muted">${unread}.</p>` : null}${commands.map((c) => {
    const passed = commandPassed(c);
    const output = log.kind === "log" ? commandOutput(log.bytes, c) : null;
    const shown = output ? excerpt(output) : null;
    return html`<details class="command ${passed ? "ok" : "bad"}"${passed ? null : html` open`}><summary><span class="mark">${passed ? "ok" : "FAIL"}</span> <span class="muted">[${c.phase ?? "verify"}]</span> <code>${c.command}</code>: ${commandEnding(c)}, ${ms(c.durationMs)}</summary>${
      shown ? html`<pre class="log">${shown.text}</pre>` : html`<p class="muted">No output found in test.log.</p>`
    }</details>`;
  })}`;
}
