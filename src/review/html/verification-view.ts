import type { LoadedRun } from "../../run-dir/run-lookup.js";
import { commandOutput, readTestLog } from "../command-output.js";
import { commandEnding, commandPassed, verificationCommands } from "../../verify/shell-commands.js";
import { type ExcerptLimits, excerptExtent, failureExcerpt, tailExcerpt } from "../../lib/failure-excerpt.js";
import { ms } from "../format.js";
import { ownFilesPrefix } from "../run-files.js";
import { proseHtml } from "../report-prose.js";
import { type Html, html } from "./escape.js";

/** What the page shows of each command's output: more lines than the text report, as many bytes. */
const PAGE_EXCERPT: ExcerptLimits = { lines: 120, lineChars: 300, bytes: 8 * 1024 };

/** A failing command's output from where it names the failure (failureExcerpt), a passing one's end. */
function excerpt(output: Buffer, passed: boolean): { text: string; extent: string } {
  const text = output.toString("utf8");
  const shown = passed ? tailExcerpt(text, PAGE_EXCERPT) : failureExcerpt(text, PAGE_EXCERPT);
  return { text: shown.lines.map((line) => `${line}\n`).join(""), extent: excerptExtent(shown) };
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
  const links = { ownFilesPrefix: ownFilesPrefix(run) ?? "" };
  const testLog = proseHtml("test.log", links);
  return html`${state}${unread ? html`<p class="muted">${proseHtml(unread, links)}.</p>` : null}${commands.map((c) => {
    const passed = commandPassed(c);
    const output = log.kind === "log" ? commandOutput(log.bytes, c) : null;
    const shown = output ? excerpt(output, passed) : null;
    return html`<details class="command ${passed ? "ok" : "bad"}"${passed ? null : html` open`}><summary><span class="mark">${passed ? "ok" : "FAIL"}</span> <span class="muted">[${c.phase ?? "verify"}]</span> <code>${c.command}</code>: ${commandEnding(c)}, ${ms(c.durationMs)}</summary>${
      shown
        ? html`${shown.extent ? html`<p class="muted">Output: ${shown.extent} (all of it in ${testLog}).</p>` : null}<pre class="log">${shown.text}</pre>`
        : html`<p class="muted">No output found in ${testLog}.</p>`
    }</details>`;
  })}`;
}
