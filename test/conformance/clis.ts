import type { ConformanceCli } from "../helpers/conformance.js";
import { claudeCli } from "./claude.js";
import { codexCli } from "./codex.js";
import { ompCli } from "./omp.js";
import { opencodeCli } from "./opencode.js";
import { piCli } from "./pi.js";

/** Each CLI as a user would have it set up: its own config in its own home, pointing at the scripted model. */
export const CONFORMANCE_CLIS: readonly ConformanceCli[] = [codexCli, claudeCli, opencodeCli, piCli, ompCli];
