import { optionTable } from "../settings/option-table.js";
import { REPO_SETTING } from "../settings/repo-setting.js";

/** `-C` as `show`, `list` and `apply` parse it (their help says what it means there): the settings table's row. */
export const REPO_OPTION = optionTable([REPO_SETTING]);
