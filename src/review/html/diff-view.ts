import { join } from "node:path";
import { type DiffFile, parsePatch } from "../../patch/patch.js";
import type { RunResult } from "../../verdict/result.js";
import { isCrlfDiff } from "../line-endings.js";
import { type Html, html } from "./escape.js";

/** Diff lines rendered in all; past them the rest of the patch is named, not shown (the whole is in changes.patch). */
export const DIFF_LINES_SHOWN = 3000;
/** Files named one by one among those left out. */
const LEFT_OUT_NAMED = 200;
/** Characters of one diff line shown (a minified file can be one line of megabytes). */
const LINE_CHARS = 1000;

const HUNK_HEADER = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/u;
const NEWLINE = 0x0a;

interface Row {
  readonly kind: "add" | "del" | "ctx" | "hunk" | "note";
  readonly old: number | null;
  readonly new: number | null;
  readonly text: string;
}

function lineText(bytes: Buffer): string {
  const text = bytes.toString("utf8");
  return text.length > LINE_CHARS ? `${text.slice(0, LINE_CHARS)}… (${text.length - LINE_CHARS} more characters)` : text;
}

/**
 * The rows of one file's hunks, numbered in the old and the new file, at most `budget` of them; a CRLF file's rows
 * without their CRs (line-endings.ts).
 */
function fileRows(bytes: Buffer, file: DiffFile, budget: number): { rows: Row[]; cut: number; crlf: boolean } {
  const hunks = file.hunks.map((hunk) => hunkRows(bytes, hunk));
  const lines = hunks.flat();
  const crlf = isCrlfDiff(
    lines.flatMap((row, i) =>
      row.kind === "hunk" || row.kind === "note" ? [] : [{ text: row.text, lastOfFile: lines[i + 1]?.kind === "note" }],
    ),
  );
  const rows: Row[] = [];
  let cut = 0;
  for (const all of hunks) {
    const shown = crlf ? all.map((row) => (row.kind === "note" ? row : { ...row, text: row.text.replace(/\r$/u, "") })) : all;
    const room = budget - rows.length;
    rows.push(...shown.slice(0, Math.max(0, room)));
    cut += Math.max(0, shown.length - Math.max(0, room));
  }
  return { rows, cut, crlf };
}

/** One hunk's rows: its `@@` line, then each line numbered in the old and the new file. */
function hunkRows(bytes: Buffer, hunk: DiffFile["hunks"][number]): Row[] {
  // The `@@` line ends just before the hunk's body.
  const headerStart = bytes.lastIndexOf(NEWLINE, hunk.bodyStart - 2) + 1;
  const header = bytes.toString("utf8", headerStart, Math.max(headerStart, hunk.bodyStart - 1));
  const numbers = HUNK_HEADER.exec(header);
  let oldLine = numbers ? Number(numbers[1]) : 0;
  let newLine = numbers ? Number(numbers[2]) : hunk.newStart;
  const lines: Row[] = [{ kind: "hunk", old: null, new: null, text: header }];
  let at = hunk.bodyStart;
  while (at < hunk.bodyEnd) {
    const newline = bytes.indexOf(NEWLINE, at);
    const end = newline === -1 || newline > hunk.bodyEnd ? hunk.bodyEnd : newline;
    const first = end > at ? bytes[at] : 0x20;
    const text = lineText(bytes.subarray(Math.min(at + 1, end), end));
    if (first === 0x2b) lines.push({ kind: "add", old: null, new: newLine++, text });
    else if (first === 0x2d) lines.push({ kind: "del", old: oldLine++, new: null, text });
    else if (first === 0x5c) lines.push({ kind: "note", old: null, new: null, text: lineText(bytes.subarray(at, end)) });
    else lines.push({ kind: "ctx", old: oldLine++, new: newLine++, text });
    at = end + 1;
  }
  return lines;
}

const SIGN = { add: "+", del: "−", ctx: " ", hunk: "", note: "" } as const;
const LETTER = { added: "A", modified: "M", deleted: "D" } as const;

function rowView(row: Row): Html {
  if (row.kind === "hunk") return html`<tr class="hunk"><td class="ln"></td><td class="ln"></td><td class="code">${row.text}</td></tr>`;
  return html`<tr class="${row.kind}"><td class="ln">${row.old}</td><td class="ln">${row.new}</td><td class="code"><span class="sign">${SIGN[row.kind]}</span>${row.text}</td></tr>`;
}

/** One file of the patch: its name and counts, then its rows (at most `budget`), or why it has none. */
function fileView(patch: Buffer, file: DiffFile, name: string, budget: number, whole: Html): { html: Html; rows: number } {
  const counts = html`<span class="add">+${file.additions}</span> <span class="del">−${file.deletions}</span>`;
  const summary = html`<summary><span class="letter">${LETTER[file.change]}</span> <code>${name}</code> ${counts}</summary>`;
  if (file.binary)
    return { html: html`<details open class="file">${summary}<p class="muted">A binary file: not shown.</p></details>`, rows: 0 };
  if (file.hunks.length === 0)
    return {
      html: html`<details open class="file">${summary}<p class="muted">No line changes (a mode change, or an empty file).</p></details>`,
      rows: 0,
    };
  const { rows, cut, crlf } = fileRows(patch, file, budget);
  const note = cut > 0 ? html`<p class="cut">… ${cut} more lines of this file are not shown (all of them are in ${whole}).</p>` : null;
  const endings = crlf ? html`<p class="muted">CRLF line endings, shown without the CRs.</p>` : null;
  return {
    html: html`<details open class="file">${summary}${endings}<table class="diff"><tbody>${rows.map(rowView)}</tbody></table>${note}</details>`,
    rows: rows.length,
  };
}

/**
 * changes.patch as a reviewer reads it: per file, its rows with the old and the new line number, added and removed
 * lines coloured. At most DIFF_LINES_SHOWN rows in all: the files past them are named, with where the whole patch is.
 */
export function diffView(patch: Buffer, result: RunResult, runDir: string): Html {
  if (patch.length === 0) return html`<p class="muted">${result.patch ? "No changes." : "No patch was extracted."}</p>`;
  const parsed = parsePatch(patch);
  // Linked relative to the run directory; its whole path shown, as the page may be read away from it.
  const whole = html`<a href="changes.patch"><code>${join(runDir, "changes.patch")}</code></a>`;
  let budget = DIFF_LINES_SHOWN;
  const shown: Html[] = [];
  const leftOut: string[] = [];
  // result.json has one entry per path, in the patch's order; a type change is two sections with one header.
  let entry = -1;
  for (const [i, file] of parsed.files.entries()) {
    if (file.header !== parsed.files[i - 1]?.header) entry++;
    const name = result.patch?.files[entry]?.path ?? file.path;
    if (budget <= 0) {
      leftOut.push(name);
      continue;
    }
    const view = fileView(patch, file, name, budget, whole);
    budget -= view.rows;
    shown.push(view.html);
  }
  const named = leftOut.slice(0, LEFT_OUT_NAMED);
  return html`${shown}${
    leftOut.length > 0
      ? html`<div class="cut"><p>${leftOut.length} more file(s) are not shown here (the report shows ${DIFF_LINES_SHOWN} diff lines); the whole patch is ${whole}:</p><ul>${named.map((name) => html`<li><code>${name}</code></li>`)}</ul>${
          leftOut.length > named.length ? html`<p>and ${leftOut.length - named.length} more</p>` : null
        }</div>`
      : null
  }`;
}
