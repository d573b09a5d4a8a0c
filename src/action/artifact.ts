import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * The run directory as a workflow artifact, through @actions/artifact (the Actions results service, authorised by
 * the job's $ACTIONS_RUNTIME_TOKEN: no write access to the repository is needed or used).
 */

/** @actions/artifact (and the Azure blob client under it) takes a second to load: only a step that uploads or downloads loads it. */
async function artifactClient() {
  const { DefaultArtifactClient } = await import("@actions/artifact");
  return new DefaultArtifactClient();
}

/** Every regular file under `dir`, absolute; links and special files are left out (a run directory has none). */
function regularFiles(dir: string): string[] {
  const files: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const stats = lstatSync(path);
    if (stats.isDirectory()) files.push(...regularFiles(path));
    else if (stats.isFile()) files.push(path);
  }
  return files;
}

export interface UploadedArtifact {
  readonly id: number | undefined;
  readonly files: number;
  readonly bytes: number | undefined;
}

/** Uploads the whole run directory as one zip named `name`, its root the run directory itself. */
export async function uploadRunDir(name: string, runDir: string): Promise<UploadedArtifact> {
  const files = regularFiles(runDir);
  const uploaded = await (await artifactClient()).uploadArtifact(name, files, runDir);
  return { id: uploaded.id, files: files.length, bytes: uploaded.size };
}

/** Downloads the artifact `name` of this workflow run into `into` (the run directory as it was uploaded). */
export async function downloadRunDir(name: string, into: string): Promise<{ readonly id: number }> {
  const client = await artifactClient();
  const { artifact } = await client.getArtifact(name);
  // The digest the upload was finalised with: a zip changed in storage is refused here, before anything reads it.
  const downloaded = await client.downloadArtifact(artifact.id, {
    path: into,
    ...(artifact.digest ? { expectedHash: artifact.digest } : {}),
  });
  if (downloaded.digestMismatch)
    throw new Error(`the artifact ${name} arrived with a digest that does not match the one it was stored with`);
  return { id: artifact.id };
}
