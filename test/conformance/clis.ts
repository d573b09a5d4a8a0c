import { CLI_INFOS, type CliName } from "../../backends/index.js";
import type { ConformanceCli } from "../helpers/conformance.js";
import { claudeCli } from "./claude.js";
import { codexCli } from "./codex.js";
import { ompCli } from "./omp.js";
import { opencodeCli } from "./opencode.js";
import { piCli } from "./pi.js";

/** One setup per registry row: a CLI added to backends/index.ts without one does not compile. */
const SETUPS: Record<CliName, ConformanceCli> = { codex: codexCli, claude: claudeCli, opencode: opencodeCli, pi: piCli, omp: ompCli };

/** Each CLI as a user would have it set up: its own config in its own home, pointing at the scripted model; in the registry's order. */
export const CONFORMANCE_CLIS: readonly ConformanceCli[] = CLI_INFOS.map((info) => SETUPS[info.name]);
