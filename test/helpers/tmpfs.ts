import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onTestFinished } from "vitest";
import { tempDir } from "./repo.js";

/** Whether this process may mount a tmpfs (root in a container that allows it): the full-disk tests need one. */
export const canMountTmpfs = (() => {
  const probe = mkdtempSync(join(tmpdir(), "handoff-mount-probe-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe], { stdio: "ignore" });
    execFileSync("umount", [probe]);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
})();

if (!canMountTmpfs)
  console.warn(
    "handoff tests: cannot mount a tmpfs here (needs root and a container that allows mount): the full-disk and read-only file-system tests are skipped",
  );

/** A tmpfs of `mebibytes` (`ro` for a read-only one) mounted on a new temp dir, unmounted when the test ends. */
export function smallFileSystem(mebibytes: number, options: { readOnly?: boolean } = {}): string {
  const dir = tempDir("handoff-small-fs");
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${mebibytes}m,mode=0700${options.readOnly ? ",ro" : ""}`, "tmpfs", dir]);
  onTestFinished(() => {
    execFileSync("umount", ["-l", dir]);
  });
  return dir;
}
