import * as core from "@actions/core";

/** GitHub shows at most 1 MiB of a step's summary and drops the rest without a word: cut before, and say so. */
const SUMMARY_LIMIT_CHARS = 1000 * 1000;

export type SummaryWritten = { readonly kind: "written"; readonly chars: number } | { readonly kind: "no_summary_file" };

/** Appends markdown to the step's summary ($GITHUB_STEP_SUMMARY), the page a reviewer opens from the workflow run. */
export async function writeStepSummary(markdown: string): Promise<SummaryWritten> {
  if (!process.env.GITHUB_STEP_SUMMARY) return { kind: "no_summary_file" };
  const text =
    markdown.length <= SUMMARY_LIMIT_CHARS
      ? markdown
      : `${markdown.slice(0, SUMMARY_LIMIT_CHARS)}\n\n… the report was cut at ${SUMMARY_LIMIT_CHARS} characters: the whole of it is in the artifact\n`;
  await core.summary.addRaw(text, true).write();
  return { kind: "written", chars: text.length };
}
