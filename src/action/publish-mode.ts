import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as core from "@actions/core";
import { GitCommandError, PublishRefusedError } from "../lib/errors.js";
import { downloadRunDir } from "./artifact.js";
import { explainApiRefusal, explainPushRefusal } from "./github-refusals.js";
import type { PublishInputs } from "./inputs.js";
import { type PublishOutcome, publishRun } from "./publish.js";
import { writeStepSummary } from "./summary.js";

/**
 * Publish mode, in a job of its own that holds the write token: the run job's artifact downloaded by name, then
 * publishRun (publish.ts) checks it, commits its patch on a branch, pushes it and opens or updates the pull request.
 */
export type PublishModeOutcome =
  | { readonly kind: "published"; readonly outcome: PublishOutcome }
  /** The job cannot publish (no repository, no checkout): nothing was downloaded. */
  | { readonly kind: "invalid"; readonly why: string }
  /** The artifact could not be had, or publishRun refused it: its one line. */
  | { readonly kind: "refused"; readonly why: string };

const firstLine = (error: unknown) => ((error as Error).message ?? String(error)).split("\n")[0]!;

/** What git printed, from the GitCommandError somewhere in the refusal's causes. */
function gitStderr(error: unknown): string {
  for (let at: unknown = error; at instanceof Error; at = at.cause) if (at instanceof GitCommandError) return at.stderr;
  return "";
}

/** The refusal's line, with the setting or permission it needs when GitHub's words say which (github-refusals.ts). */
function explained(error: unknown): string {
  if (error instanceof PublishRefusedError) {
    if (error.code !== "push_failed" && error.code !== "remote_unreadable") return firstLine(error);
    return explainPushRefusal(firstLine(error), gitStderr(error)) ?? firstLine(error);
  }
  return explainApiRefusal(error) ?? firstLine(error);
}

export async function publishMode(inputs: PublishInputs): Promise<PublishModeOutcome> {
  core.setSecret(inputs.githubToken);
  // As git's AUTHORIZATION header carries it (push-auth.ts), should git ever print one.
  core.setSecret(Buffer.from(`x-access-token:${inputs.githubToken}`).toString("base64"));
  const [owner, name, ...rest] = (process.env.GITHUB_REPOSITORY ?? "").split("/");
  if (!owner || !name || rest.length > 0)
    return { kind: "invalid", why: "GITHUB_REPOSITORY is not owner/name: publish mode runs in a workflow job" };
  const repo = process.env.GITHUB_WORKSPACE;
  if (!repo) return { kind: "invalid", why: "GITHUB_WORKSPACE is not set: publish mode runs in a job that checked out the repository" };

  const runDir = mkdtempSync(join(process.env.RUNNER_TEMP || tmpdir(), "handoff-artifact-"));
  try {
    const { id } = await downloadRunDir(inputs.artifactName, runDir);
    core.info(`downloaded artifact ${inputs.artifactName} (id ${id}) into ${runDir}: ${readdirSync(runDir).sort().join(", ")}`);
  } catch (error) {
    return { kind: "refused", why: `the artifact ${inputs.artifactName} could not be downloaded: ${firstLine(error)}` };
  }

  let outcome: PublishOutcome;
  try {
    outcome = await publishRun({
      runDir,
      repo,
      remote: inputs.remote,
      branch: inputs.branch,
      baseBranch: inputs.base,
      repository: { owner, name },
      token: inputs.githubToken,
      apiUrl: process.env.GITHUB_API_URL || "https://api.github.com",
    });
  } catch (error) {
    return { kind: "refused", why: `not published: ${explained(error)}` };
  }
  const pr = outcome.pullRequest;
  core.info(
    outcome.credential === "github-token"
      ? `pushed ${outcome.branch} with the github-token input`
      : `pushed ${outcome.branch} with the remote's own access (not an https remote: github-token was used for the pull request only)`,
  );
  core.setOutput("branch", outcome.branch);
  core.setOutput("commit", outcome.commit);
  core.setOutput("pull-request-number", String(pr.number));
  core.setOutput("pull-request-url", pr.url);
  try {
    await writeStepSummary(
      `**handoff** ${pr.created ? "opened" : "updated"} [pull request #${pr.number}](${pr.url}) from branch \`${outcome.branch}\` (commit ${outcome.commit.slice(0, 12)})\n`,
    );
  } catch (error) {
    core.warning(`the step summary could not be written: ${firstLine(error)}`);
  }
  return { kind: "published", outcome };
}
