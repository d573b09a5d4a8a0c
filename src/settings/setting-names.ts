import type { SettingNames } from "../lib/errors.js";
import { SETTINGS } from "./settings.js";

const FLAGS = new Map<string, string>(SETTINGS.flatMap((row) => (row.option === null ? [] : [[row.option, `--${row.flag}`]])));

/** The command line's names: each setting by its flag (`timeoutMs` is `--timeout`); a word that is no field stays as it is. */
export const FLAG_NAMES: SettingNames = { surface: "command line", name: (field) => FLAGS.get(field) ?? field };
