import { htmlText } from "../../lib/markdown-fence.js";
import { displayText } from "../../patch/rules/path-names.js";

/**
 * Markup the HTML report built itself. Every string from a run (task, paths, command output, agent text) is hostile:
 * it reaches the page only as a value of the `html` template below, which escapes it; an `Html` passes unchanged.
 */
export class Html {
  readonly #markup: string;
  constructor(markup: string) {
    this.#markup = markup;
  }
  toString(): string {
    return this.#markup;
  }
}

export type HtmlValue = Html | string | number | null | undefined | false | readonly HtmlValue[];

/** The one escape of the report: controls and invisible characters made visible as the text report shows them (newlines and tabs kept), then the five HTML metacharacters. */
export function escapeHtml(text: string): string {
  return htmlText(displayText(text));
}

function markupOf(value: HtmlValue): string {
  if (value instanceof Html) return value.toString();
  if (Array.isArray(value)) return value.map(markupOf).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(String(value));
}

/** A piece of markup: the literal parts are the report's own, every interpolated value is escaped unless it is Html already. */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): Html {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += markupOf(value) + (strings[i + 1] ?? "");
  });
  return new Html(out);
}
