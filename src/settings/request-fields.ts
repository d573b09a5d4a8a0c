import { getPath, setPath } from "./dotted-path.js";
import { SETTINGS, type Setting } from "./settings.js";

type RecordedRow = Extract<Setting, { request: object }>;

const recorded = SETTINGS.filter((row): row is RecordedRow => "request" in row);

/** The run options a resumed run takes from the earlier run's request.json (rows with `request.inherit`). */
export type InheritedOption = Extract<RecordedRow, { request: { inherit: true } }>["option"];

/**
 * The settings' part of request.json: each recorded setting's resolved value at its place. `resolved` is the run's
 * `ResolvedOptions`; what request.json holds besides settings (the run's identity, its holdouts, the verification
 * inputs' files) its writer adds.
 */
export function recordedSettings(resolved: object): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const row of recorded) {
    const from = "resolved" in row.request ? row.request.resolved : row.option;
    setPath(record, row.request.path, getPath(resolved, from));
  }
  return record;
}

/**
 * The options of a run that continues an earlier one, as that run's request.json recorded them after `.handoff.json`
 * and the defaults: every inherited setting the record holds (null, the record's "none", is no value).
 */
export function inheritedSettings(request: object): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const row of recorded) {
    if (!row.request.inherit) continue;
    const value = getPath(request, row.request.path);
    if (value !== undefined && value !== null) setPath(options, row.option, value);
  }
  return options;
}
