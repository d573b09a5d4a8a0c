/** The formats `handoff show --format` takes, the default first: named once for `show`, its help and the docs' test. */
export const REPORT_FORMATS = ["text", "markdown", "json", "junit", "html"] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

export function isReportFormat(word: string): word is ReportFormat {
  return (REPORT_FORMATS as readonly string[]).includes(word);
}

/** `text, markdown, json, junit or html`. */
export const REPORT_FORMATS_IN_WORDS = `${REPORT_FORMATS.slice(0, -1).join(", ")} or ${REPORT_FORMATS.at(-1)}`;
