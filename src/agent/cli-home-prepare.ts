import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import type { CliHome } from "./cli-contract.js";

/**
 * Makes a CLI home's dirs and writes its files: the one place a backend's `home()` becomes files on disk. A file is
 * removed first and created anew (`wx`), so that a link the agent left in its place in an earlier turn is replaced,
 * not followed out of the home.
 */
export function prepareCliHome(home: Pick<CliHome, "dirs" | "files">): void {
  for (const dir of home.dirs) mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const file of home.files ?? []) {
    rmSync(file.at, { force: true, recursive: true });
    writeFileSync(file.at, file.text, { flag: "wx", mode: 0o600 });
  }
}
