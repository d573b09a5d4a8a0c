import type { Command } from "../../src/cli/command-names.js";
import { APPLY_OPTIONS } from "../../src/cli/commands/apply.js";
import { BACKENDS_OPTIONS } from "../../src/cli/commands/backends.js";
import { CACHE_OPTIONS } from "../../src/cli/commands/cache.js";
import { GC_OPTIONS } from "../../src/cli/commands/gc.js";
import { LIST_OPTIONS } from "../../src/cli/commands/list.js";
import { SHOW_OPTIONS } from "../../src/cli/commands/show.js";
import { BATCH_OPTIONS, MCP_OPTIONS, RESUME_OPTIONS, RUN_OPTIONS, WORKER_OPTIONS } from "../../src/cli/option-tables.js";

/** Every command's `parseArgs` options, as the command parses its argv (enqueue takes batch's). */
export const COMMAND_OPTIONS = {
  run: RUN_OPTIONS,
  resume: RESUME_OPTIONS,
  batch: BATCH_OPTIONS,
  enqueue: BATCH_OPTIONS,
  show: SHOW_OPTIONS,
  apply: APPLY_OPTIONS,
  gc: GC_OPTIONS,
  cache: CACHE_OPTIONS,
  backends: BACKENDS_OPTIONS,
  list: LIST_OPTIONS,
  worker: WORKER_OPTIONS,
  mcp: MCP_OPTIONS,
} as const satisfies Record<Command, object>;
