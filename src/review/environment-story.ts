import { escapeControls } from "../vocabulary/display.js";
import type { RunResult } from "../verdict/result.js";
import type { ReportWriter } from "./attempts-story.js";
import { ms } from "./format.js";

/**
 * The "Environment" section of `handoff show`: where the set-up base came from (the cache, this run, or nowhere and
 * why), how the workspaces were made, whether verification set up again and why, and what setup changed. Nothing
 * for a result written before base environments, or for a run that had neither setup nor overlay views.
 */
export function writeEnvironment(r: RunResult, w: Pick<ReportWriter, "heading" | "item" | "code" | "localPaths">): void {
  const e = r.environment;
  if (!e || (e.source === "none" && r.verification.commands.every((c) => c.phase !== "setup") && e.workspaceMode === "copy")) return;
  w.heading("Environment");
  const key = e.key ? w.code(e.key.slice(0, 12)) : "";
  switch (e.source) {
    case "reused":
      w.item(
        `base environment ${key} reused from the cache: no setup ran (its setup took ${ms(e.setupMs ?? 0)} when run ${e.builtBy} built it)`,
      );
      break;
    case "built":
      w.item(
        `base environment ${key} built by this run (setup ${ms(e.setupMs ?? 0)}) and cached${w.localPaths ? ` in ${escapeControls(e.cacheDir)}` : ""}`,
      );
      break;
    case "none":
      w.item(`no base environment: ${escapeControls(e.noneReason ?? "setup ran in each checkout")}`);
      break;
  }
  w.item(
    e.workspaceMode === "overlay"
      ? "workspaces: copy-on-write views of it (overlay)"
      : `workspaces: copies${e.workspaceModeReason ? ` (${escapeControls(e.workspaceModeReason)})` : ""}`,
  );
  if (e.verificationSetup)
    w.item(
      `verification ${e.verificationSetup.ran ? "ran setup again" : "did not run setup again"}: ${escapeControls(e.verificationSetup.reason)}`,
    );
  if (e.setupChanges.length > 0)
    w.item(
      `setup changed tracked files, put back to the base (never part of the patch): ${e.setupChanges.slice(0, 20).map(w.code).join(", ")}`,
    );
}
