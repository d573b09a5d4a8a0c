import type { CliName } from "../../backends/index.js";
import { claudeCli } from "./claude.js";
import type { CliUser } from "./cli-user.js";
import { codexCli } from "./codex.js";
import { copilotCli } from "./copilot.js";
import { geminiCli } from "./gemini.js";
import { ompCli } from "./omp.js";
import { opencodeCli } from "./opencode.js";
import { piCli } from "./pi.js";

export type { CliUser } from "./cli-user.js";

/** Each agent CLI's user, pointed at the scripted model: one per registry row (a CLI added without one does not compile). */
export const CLI_USERS: Readonly<Record<CliName, CliUser>> = {
  codex: codexCli,
  claude: claudeCli,
  opencode: opencodeCli,
  pi: piCli,
  omp: ompCli,
  copilot: copilotCli,
  gemini: geminiCli,
};
