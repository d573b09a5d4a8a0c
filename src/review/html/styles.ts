import { html } from "./escape.js";

/**
 * The report's only styles: inline, system fonts (nothing is fetched), readable on screen and in a screenshot, in the
 * reader's light or dark scheme (prefers-color-scheme), and on a 400 px phone: long words wrap, only a diff or a wide
 * table scrolls, inside its own box.
 */
export const STYLES = html`
:root { color-scheme: light dark; --fg: #1f2328; --bg: #fff; --ok: #1a7f37; --bad: #cf222e; --muted: #656d76; --line: #d0d7de; --add: #e6ffec; --del: #ffebe9; --hunk: #ddf4ff; --panel: #f6f8fa; --ok-bg: #f3fbf5; --bad-bg: #fff8f7; --bar: #54aeff; --link: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --ok: #3fb950; --bad: #f85149; --muted: #8d96a0; --line: #30363d; --add: #12261e; --del: #2d1417; --hunk: #121d2f; --panel: #161b22; --ok-bg: #0f1f16; --bad-bg: #231314; --bar: #388bfd; --link: #4493f8; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1100px; padding: 20px 24px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); overflow-wrap: anywhere; }
a { color: var(--link); }
h1 { font-size: 18px; margin: 0 0 12px; font-weight: 600; }
h2 { font-size: 16px; margin: 26px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 16px 0 6px; }
code, pre, .code, .num, .ln { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; }
:not(pre, td) > code { background: var(--panel); border-radius: 4px; padding: 0 3px; }
.muted { color: var(--muted); }
.ok-text { color: var(--ok); } .bad-text { color: var(--bad); }
.verdict { border: 2px solid var(--bad); border-radius: 8px; padding: 12px 16px; background: var(--bad-bg); }
.verdict.verified { border-color: var(--ok); background: var(--ok-bg); }
.verdict .reason { font-size: 22px; font-weight: 700; color: var(--bad); overflow-wrap: anywhere; }
.verdict.verified .reason { color: var(--ok); }
.verdict .exit { margin-left: 4px; color: var(--muted); white-space: nowrap; }
.verdict .summary { font-size: 15px; margin-top: 4px; }
.task { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; font-size: 14px; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 3px 14px; margin: 14px 0 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; min-width: 0; }
ul.findings { padding-left: 20px; margin: 4px 0; } ul.findings li.violation { color: var(--bad); }
.rule { font-weight: 600; }
details { margin: 6px 0; }
summary { cursor: pointer; }
details.command { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; }
details.command.bad { border-color: var(--bad); }
.mark { font-weight: 700; color: var(--ok); } .bad .mark { color: var(--bad); }
pre.log { background: var(--panel); padding: 8px; margin-top: 6px; max-height: 420px; overflow: auto; }
.story { margin: 2px 0; padding-left: 14px; text-indent: -12px; }
.story::before { content: "• "; color: var(--muted); }
.story.depth-1 { margin-left: 20px; } .story.depth-2 { margin-left: 40px; } .story.depth-3 { margin-left: 60px; }
pre.story-block { margin: 4px 0 8px 40px; }
details.file { border: 1px solid var(--line); border-radius: 6px; overflow: hidden; }
details.file > summary { background: var(--panel); padding: 6px 10px; border-bottom: 1px solid var(--line); }
.letter { font-weight: 700; }
span.add { color: var(--ok); } span.del { color: var(--bad); }
table { border-collapse: collapse; }
.scroll { overflow-x: auto; max-width: 100%; }
table.candidates th, table.candidates td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
table.candidates tr.winner td { font-weight: 600; background: var(--ok-bg); }
ul.notes { padding-left: 20px; margin: 6px 0; }
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
.bar { height: 12px; border-radius: 3px; background: var(--bar); min-width: 2px; }
tr.bad .bar { background: var(--bad); }
.note { color: var(--bad); margin-left: 6px; }
table.calls td { padding: 1px 8px; } table.calls tr.bad td { color: var(--bad); }
ul.steps { list-style: none; padding-left: 0; } ul.steps li { margin: 1px 0; }
.num { text-align: right; color: var(--muted); white-space: nowrap; }
footer { margin-top: 30px; color: var(--muted); font-size: 12px; }
@media (max-width: 600px) {
  body { padding: 12px 10px 30px; }
  dl.facts { grid-template-columns: minmax(0, 1fr); gap: 0; }
  dl.facts dd { margin-bottom: 6px; }
  table.diff td { padding: 0 4px; }
  table.diff td.ln { min-width: 28px; }
  td.bar-cell { width: 40%; }
  table.timeline td, table.timeline th { padding: 2px 4px; }
  table.candidates th, table.candidates td { padding: 3px 6px; overflow-wrap: normal; }
}
`;
