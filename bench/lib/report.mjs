/** The results table: one line per phase and repository, handoff's median against its anchor's, and the verdict. */
export const TARGETS = {
  ratio: 1.5,
  wholeRunRatio: 1.5,
  peakRssBytes: 200 * 1024 * 1024,
  ratioSizes: ["medium", "large"],
  // The real npm project (bench/lib/real-project.mjs): handoff's overhead against one `npm ci` (+ one checkout).
  realFirstRunOverhead: 1.2,
  realSecondRunOverhead: 0.25,
};

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
  if (results.real?.error) missed.push(results.real.error);
  for (const row of results.real?.rows ?? []) {
    row.met = row.target === null ? null : row.ratio <= row.target;
    if (row.met === false) missed.push(`${results.real.name} ${row.phase}: ${row.ratio}× (target ${row.target}×)`);
  }
  if (results.ingestion) {
    const ingest = results.ingestion;
    ingest.met = { rss: ingest.peakRssBytes < TARGETS.peakRssBytes, ratio: ingest.ratio !== null && ingest.ratio >= ingest.ratioTarget };
    if (!ingest.met.rss) missed.push(`ingestion peak RSS ${mib(ingest.peakRssBytes)} (target < ${mib(TARGETS.peakRssBytes)})`);
    if (!ingest.met.ratio)
      missed.push(
        `ingestion: ${ingest.mbPerSecond} MB/s, ${ingest.ratio}× the byte-counting anchor's ${ingest.anchor.mbPerSecond} MB/s (target ≥ ${ingest.ratioTarget}×)`,
      );
  }
  for (const row of results.startup?.rows ?? []) {
    // A ratio to node -e 0 (issue 28) and an absolute median (issue 32): met when each it has is.
    const targetMs = row.targetMs ?? null;
    row.met =
      row.target === null && targetMs === null
        ? null
        : (row.target === null || row.ratio <= row.target) && (targetMs === null || row.ms.median <= targetMs);
    if (row.met === false)
      missed.push(
        `start-up ${row.command}: ${Math.round(row.ms.median)} ms, ${row.ratio}× node -e 0 (target ${[...(row.target === null ? [] : [`≤ ${row.target}×`]), ...(targetMs === null ? [] : [`≤ ${targetMs} ms`])].join(", ")})`,
      );
  }
  const firstPhase = results.startup?.firstPhase;
  if (firstPhase) {
    firstPhase.met = firstPhase.ms.median <= firstPhase.targetMs;
    if (!firstPhase.met)
      missed.push(
        `start-up handoff run: first phase ${Math.round(firstPhase.ms.median)} ms after the process started (target ≤ ${firstPhase.targetMs} ms)`,
      );
  }
  const egress = results.egress;
  if (egress) {
    const t = egress.targets;
    egress.met = {
      throughput: egress.throughput.gate >= t.throughputMBps,
      rss: egress.gateRssBytes < t.gateRssMiB * 1024 ** 2,
      run: egress.run.addedMs <= t.addedRunMs,
    };
    if (!egress.met.throughput) missed.push(`egress: ${egress.throughput.gate} MB/s through the gate (target ≥ ${t.throughputMBps})`);
    if (!egress.met.rss) missed.push(`egress: the gate's RSS ${mib(egress.gateRssBytes)} (target < ${t.gateRssMiB} MiB)`);
    if (!egress.met.run) missed.push(`egress: a whole run +${egress.run.addedMs} ms filtered (target ≤ ${t.addedRunMs} ms)`);
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
  if (rows.length > 0) lines.push(...tableLines(header, rows));
  if (results.real) lines.push(...(lines.length > 0 ? [""] : []), ...realProjectLines(results.real));
  if (results.ingestion) {
    const ingest = results.ingestion;
    const mark = (met) => (met ? "ok" : "MISSED");
    lines.push(
      "",
      `JSONL ingestion of ${gb(ingest.bytes)} of codex events (medians of ${ingest.rounds}):`,
      `  handoff run, reading           ${ingest.seconds.toFixed(2)} s = ${ingest.mbPerSecond.toFixed(0)} MB/s  ${ingest.ratio}× the anchor  (target ≥ ${ingest.ratioTarget}× ${mark(ingest.met.ratio)})`,
      `  anchor: the stream into node   ${ingest.anchor.seconds.toFixed(2)} s = ${ingest.anchor.mbPerSecond.toFixed(0)} MB/s  (a process that only counts the bytes)`,
      `  split + JSON.parse alone        ${ingest.jsonFloor.seconds.toFixed(2)} s = ${ingest.jsonFloor.mbPerSecond.toFixed(0)} MB/s  ${(ingest.jsonFloor.mbPerSecond / ingest.anchor.mbPerSecond).toFixed(2)}× the anchor  (reported: any JSONL reader's floor)`,
      `  (from the agent's start: handoff's agent phase ${ingest.agentPhase.mbPerSecond.toFixed(0)} MB/s, the anchor ${ingest.anchor.fromStart.mbPerSecond.toFixed(0)} MB/s)`,
      `  handoff's peak RSS ${mib(ingest.peakRssBytes)} (target < ${mib(TARGETS.peakRssBytes)} ${mark(ingest.met.rss)}); events.jsonl kept ${mib(ingest.eventsJsonlBytes)}`,
    );
  }
  if (results.batch) {
    const batch = results.batch;
    lines.push(
      "",
      `${batch.tasks} tasks on ${batch.jobs} jobs (${results.machine.cpus} cores): handoff batch --jobs ${batch.jobs} ${ms(batch.batch.median)} ms, ` +
        `${batch.tasks} × handoff run ${ms(batch.sequential.median)} ms (medians of ${batch.rounds}): the batch takes ${batch.ratio.toFixed(2)}× the time`,
    );
  }
  if (results.startup) {
    const startup = results.startup;
    lines.push("", `start-up against node -e 0 (${ms(startup.node.median)} ms; medians of ${startup.rounds}):`);
    for (const row of startup.rows) {
      const targets = [
        ...(row.target === null ? [] : [`≤ ${row.target}×`]),
        ...((row.targetMs ?? null) === null ? [] : [`≤ ${row.targetMs} ms`]),
      ];
      lines.push(
        `  ${row.command.padEnd(20)} ${ms(row.ms.median)} ms  ${row.ratio.toFixed(2)}×${targets.length === 0 ? "" : `  (target ${targets.join(", ")} ${row.met ? "ok" : "MISSED"})`}`,
      );
    }
    if (startup.firstPhase)
      lines.push(
        `  ${"handoff run".padEnd(20)} ${ms(startup.firstPhase.ms.median)} ms from the process's start to the first phase  (target ≤ ${startup.firstPhase.targetMs} ms ${startup.firstPhase.met ? "ok" : "MISSED"}); the whole run ${ms(startup.firstPhase.wholeRun.median)} ms`,
      );
  }
  if (results.egress) {
    const e = results.egress;
    const mark = (met) => (met ? "ok" : "MISSED");
    lines.push(
      "",
      `egress (medians of ${e.throughput.ms.gate.n}):`,
      `  ${e.responseBytes / 1024 ** 2} MiB response: ${e.throughput.gate} MB/s through the forwarder and the gate, ${e.throughput.direct} MB/s straight  (target ≥ ${e.targets.throughputMBps} ${mark(e.met.throughput)})`,
      `  the gate's peak RSS ${mib(e.gateRssBytes)}  (target < ${e.targets.gateRssMiB} MiB ${mark(e.met.rss)})`,
      `  a whole run: ${ms(e.run.ms.filtered.median)} ms filtered, ${ms(e.run.ms.open.median)} ms with --allow-net '*': +${e.run.addedMs} ms  (target ≤ ${e.targets.addedRunMs} ms ${mark(e.met.run)})`,
    );
  }
  return lines.join("\n");
}

/** The real npm project's rows in the same table (what was measured against its anchor), then its caches and phases. */
function realProjectLines(real) {
  if (real.error) return [real.error];
  const header = ["project", "row", "measured ms", "anchor ms", "ratio", "target", "anchor"];
  const rows = real.rows.map((row) => [
    real.name,
    row.phase,
    ms(row.measured.median),
    ms(row.anchor.median),
    `${row.ratio.toFixed(2)}×`,
    row.target === null ? "—" : `≤ ${row.target}× ${row.met ? "ok" : "MISSED"}`,
    row.note,
  ]);
  const phases = (run) =>
    Object.entries(run.phases)
      .map(([name, value]) => `${name} ${ms(value)}`)
      .join(", ");
  return [
    `${real.name}: ${real.facts.packages} packages, ${real.rounds} rounds, medians. Caches: floor and peer ${real.caches.floorAndPeer}; handoff ${real.caches.handoff}.`,
    ...tableLines(header, rows),
    ...["first", "second"].map(
      (which) =>
        `handoff ${which} run (ms): ${phases(real.handoff[which])}; setup commands ${real.handoff[which].setupCommands.count} (${ms(real.handoff[which].setupCommands.ms.median)}), verify commands ${ms(real.handoff[which].verifyCommands.median)}; ` +
        `outside timings.durationMs (start-up, teardown) ${ms(real.handoff[which].outsideTimings.median)}`,
    ),
  ];
}

function tableLines(header, rows) {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells) =>
    `| ${cells.map((cell, column) => (column >= 2 && column <= 4 ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join(" | ")} |`;
  return [
    line(header),
    `|${widths.map((w, column) => (column >= 2 && column <= 4 ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`,
    ...rows.map(line),
  ];
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
