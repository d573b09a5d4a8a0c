import { html } from "./escape.js";

/** The report's only styles: inline, system fonts (nothing is fetched), readable on screen and in a screenshot. */
export const STYLES = html`
:root { --ok: #1a7f37; --bad: #cf222e; --muted: #656d76; --line: #d0d7de; --add: #e6ffec; --del: #ffebe9; --hunk: #ddf4ff; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1100px; padding: 20px 24px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; background: #fff; }
h1 { font-size: 18px; margin: 0 0 12px; font-weight: 600; }
h2 { font-size: 16px; margin: 26px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 16px 0 6px; }
code, pre, .code, .num, .ln { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; }
.muted { color: var(--muted); }
.ok-text { color: var(--ok); } .bad-text { color: var(--bad); }
.verdict { border: 2px solid var(--bad); border-radius: 8px; padding: 12px 16px; background: #fff8f7; }
.verdict.verified { border-color: var(--ok); background: #f3fbf5; }
.verdict .reason { font-size: 22px; font-weight: 700; color: var(--bad); }
.verdict.verified .reason { color: var(--ok); }
.verdict .exit { margin-left: 10px; color: var(--muted); }
.verdict .summary { font-size: 15px; margin-top: 4px; }
.task { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; font-size: 14px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 14px 0 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
ul.findings { padding-left: 20px; margin: 4px 0; } ul.findings li.violation { color: var(--bad); }
.rule { font-weight: 600; }
details { margin: 6px 0; }
summary { cursor: pointer; }
details.command { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; }
details.command.bad { border-color: var(--bad); }
.mark { font-weight: 700; color: var(--ok); } .bad .mark { color: var(--bad); }
pre.log { background: #f6f8fa; padding: 8px; margin-top: 6px; max-height: 420px; overflow: auto; }
details.file { border: 1px solid var(--line); border-radius: 6px; overflow: hidden; }
details.file > summary { background: #f6f8fa; padding: 6px 10px; border-bottom: 1px solid var(--line); }
.letter { font-weight: 700; }
span.add { color: var(--ok); } span.del { color: var(--bad); }
table { border-collapse: collapse; }
table.diff { width: 100%; }
table.diff td { padding: 0 8px; vertical-align: top; }
table.diff td.ln { width: 1%; min-width: 44px; text-align: right; color: var(--muted); user-select: none; border-right: 1px solid var(--line); }
table.diff td.code { white-space: pre-wrap; word-break: break-all; }
table.diff tr.add td { background: var(--add); } table.diff tr.del td { background: var(--del); }
table.diff tr.hunk td { background: var(--hunk); color: var(--muted); }
.sign { display: inline-block; width: 1.2em; user-select: none; }
.cut { color: var(--muted); font-style: italic; padding: 4px 10px; }
table.timeline { width: 100%; }
table.timeline th { text-align: left; color: var(--muted); font-weight: normal; }
table.timeline td, table.timeline th { padding: 2px 8px; }
td.bar-cell { width: 60%; }
.bar { height: 12px; border-radius: 3px; background: #54aeff; min-width: 2px; }
tr.bad .bar { background: var(--bad); }
.note { color: var(--bad); margin-left: 6px; }
table.calls td { padding: 1px 8px; } table.calls tr.bad td { color: var(--bad); }
ul.steps { list-style: none; padding-left: 0; } ul.steps li { margin: 1px 0; }
.num { text-align: right; color: var(--muted); white-space: nowrap; }
footer { margin-top: 30px; color: var(--muted); font-size: 12px; }
`;
