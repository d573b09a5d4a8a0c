import { assertNever } from "../lib/assert-never.js";
import { JUNIT_BUILDER, xmlLine } from "../verify/junit-verdict.js";
import type { BatchRecord, TaskRecord } from "./batch-record.js";
import { junitKind } from "./outcome.js";

/**
 * A batch as JUnit XML, for CI test tabs: one <testsuite> for the batch, one <testcase> per task in file order (its
 * name the task id, its result the task's outcome as junitKind says: passed, <failure>, <error> or <skipped>). The
 * counts in the suite's attributes are counted from the same cases. Text goes through xmlLine, so the output always
 * parses whatever a summary holds.
 */

const CLASSNAME = "handoff.batch";

function seconds(ms: number | null): string {
  return ((ms ?? 0) / 1000).toFixed(3);
}

function testcase(task: TaskRecord): Record<string, unknown> {
  const message = xmlLine(`${task.outcome}: ${task.summary}`);
  const head = { "@_name": xmlLine(task.id), "@_classname": CLASSNAME, "@_time": seconds(task.durationMs) };
  const out = task.runDir === null ? {} : { "system-out": xmlLine(task.runDir) };
  const kind = junitKind(task.outcome);
  switch (kind) {
    case "passed":
      return { ...head, ...out };
    case "failure":
    case "error":
      return { ...head, [kind]: { "@_message": message, "@_type": task.outcome, "#text": message }, ...out };
    case "skipped":
      return { ...head, skipped: { "@_message": message }, ...out };
    default:
      return assertNever(kind);
  }
}

export function renderBatchJunit(record: BatchRecord): string {
  const kinds = record.tasks.map((task) => junitKind(task.outcome));
  const count = (kind: ReturnType<typeof junitKind>) => kinds.filter((each) => each === kind).length;
  const totals = {
    "@_tests": record.tasks.length,
    "@_failures": count("failure"),
    "@_errors": count("error"),
    "@_skipped": count("skipped"),
    "@_time": seconds(record.durationMs),
  };
  const document = {
    "?xml": { "@_version": "1.0", "@_encoding": "UTF-8" },
    testsuites: {
      "@_name": "handoff batch",
      ...totals,
      testsuite: {
        "@_name": xmlLine(`handoff batch ${record.batchId}`),
        ...totals,
        "@_timestamp": xmlLine(record.startedAt),
        properties: {
          property: [
            { "@_name": "batchId", "@_value": xmlLine(record.batchId) },
            { "@_name": "worst", "@_value": record.worst },
            { "@_name": "exitCode", "@_value": record.exitCode },
            { "@_name": "interrupted", "@_value": String(record.interrupted) },
          ],
        },
        testcase: record.tasks.map(testcase),
      },
    },
  };
  return JUNIT_BUILDER.build(document) as string;
}
