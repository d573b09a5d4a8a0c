import { assertNever } from "../../lib/assert-never.js";
import { codeSpan } from "../../lib/markdown-fence.js";
import type { ReportWriter } from "../attempts-story.js";
import { type RunFileLinks, proseHtml } from "../report-prose.js";
import { type Html, html } from "./escape.js";

type Entry =
  | { readonly kind: "heading"; readonly text: string }
  | { readonly kind: "item"; readonly text: string; readonly depth: number }
  | { readonly kind: "block"; readonly lines: readonly string[] };

/**
 * A section the text and markdown reports share (the attempts, the environment), written through a ReportWriter and
 * rendered as the page's: its heading an `<h2>`, its items a list (nested by depth), its blocks preformatted, code
 * marked as the markdown does and rendered by proseHtml; null when the section wrote nothing.
 */
export function storyView(write: (w: ReportWriter) => void, links: RunFileLinks): Html | null {
  const entries: Entry[] = [];
  write({
    heading: (text) => entries.push({ kind: "heading", text }),
    item: (text, depth = 0) => entries.push({ kind: "item", text, depth }),
    code: codeSpan,
    block: (lines) => entries.push({ kind: "block", lines }),
    // As recorded: proseHtml renders the item whole, its code spans and run files included.
    prose: (text) => text,
    localPaths: true,
  });
  if (entries.length === 0) return null;
  return html`${entries.map((entry) => entryView(entry, links))}`;
}

function entryView(entry: Entry, links: RunFileLinks): Html {
  switch (entry.kind) {
    case "heading":
      return html`<h2>${entry.text}</h2>\n`;
    case "item":
      return html`<div class="story depth-${Math.min(entry.depth, 3)}">${proseHtml(entry.text, links)}</div>\n`;
    case "block":
      return html`<pre class="log story-block">${entry.lines.join("\n")}</pre>\n`;
    default:
      return assertNever(entry);
  }
}
