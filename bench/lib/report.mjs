/** The results table: one line per phase and repository, handoff's median against its anchor's, and the verdict. */
export const TARGETS = { ratio: 1.5, wholeRunRatio: 1.5, peakRssBytes: 200 * 1024 * 1024, ratioSizes: ["medium", "large"] };

export function judgeRows(results) {
  const missed = [];
  for (const repo of results.repos) {
    for (const row of repo.rows) {
      // A row may carry its own target (null: none), else the one for its phase on the sizes with targets.
      row.target =
        row.targetRatio !== undefined
          ? row.targetRatio
          : TARGETS.ratioSizes.includes(repo.name)
            ? row.phase.startsWith("whole run")
              ? TARGETS.wholeRunRatio
              : TARGETS.ratio
            : null;
      row.met = row.target === null ? null : row.ratio <= row.target;
      if (row.met === false) missed.push(`${repo.name} ${row.phase}: ${row.ratio}× (target ${row.target}×)`);
    }
  }
  if (results.ingestion) {
    results.ingestion.met = results.ingestion.peakRssBytes < TARGETS.peakRssBytes;
    if (!results.ingestion.met)
      missed.push(`ingestion peak RSS ${mib(results.ingestion.peakRssBytes)} (target < ${mib(TARGETS.peakRssBytes)})`);
  }
  return missed;
}

export function formatTable(results) {
  const lines = [];
  const header = ["repo", "phase", "handoff ms", "anchor ms", "ratio", "target", "anchor"];
  const rows = [];
  for (const repo of results.repos) {
    for (const row of repo.rows) {
      rows.push([
        repo.name,
        row.phase,
        ms(row.handoff.median),
        ms(row.anchor.median),
        `${row.ratio.toFixed(2)}×`,
        row.target === null ? "—" : `≤ ${row.target}× ${row.met ? "ok" : "MISSED"}`,
        row.note,
      ]);
    }
  }
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells) =>
    `| ${cells.map((cell, column) => (column >= 2 && column <= 4 ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join(" | ")} |`;
  lines.push(
    line(header),
    `|${widths.map((w, column) => (column >= 2 && column <= 4 ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`,
  );
  for (const row of rows) lines.push(line(row));
  if (results.ingestion) {
    const ingest = results.ingestion;
    lines.push(
      "",
      `JSONL ingestion: ${gb(ingest.bytes)} of codex events in ${ingest.seconds.toFixed(2)} s = ${ingest.mbPerSecond.toFixed(0)} MB/s; ` +
        `handoff's peak RSS ${mib(ingest.peakRssBytes)} (target < ${mib(TARGETS.peakRssBytes)} ${ingest.met ? "ok" : "MISSED"}); events.jsonl kept ${mib(ingest.eventsJsonlBytes)}`,
    );
  }
  return lines.join("\n");
}

function ms(value) {
  return value >= 100 ? Math.round(value).toLocaleString("en-US") : value.toFixed(1);
}

function mib(bytes) {
  return `${(bytes / 1024 ** 2).toFixed(0)} MiB`;
}

function gb(bytes) {
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}
