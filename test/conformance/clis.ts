import { CLI_INFOS } from "../../backends/index.js";
import { CLI_USERS } from "../../scripted-model/users/index.js";
import type { ConformanceCli } from "../helpers/conformance.js";

/** Each CLI as a user would have it set up: its own config in its own home, pointing at the scripted model; in the registry's order. */
export const CONFORMANCE_CLIS: readonly ConformanceCli[] = CLI_INFOS.map((info) => CLI_USERS[info.name]);
