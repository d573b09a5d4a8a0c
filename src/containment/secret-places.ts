import { join } from "node:path";
import { isInside } from "../lib/paths.js";

/**
 * Places in a home that hold credentials: never shown to a contained process, whether a toolchain's root holds one
 * (it is masked with an empty file or directory) or a user names one with `--expose` (refused).
 */
export const SECRET_PLACES = [
  ".ssh",
  ".gnupg",
  ".aws",
  ".azure",
  ".kube",
  ".docker",
  ".netrc",
  ".npmrc",
  ".yarnrc",
  ".yarnrc.yml",
  ".pypirc",
  ".git-credentials",
  ".gitconfig",
  ".config/git",
  ".config/gh",
  ".config/gcloud",
  ".config/hub",
  ".config/pip",
  ".config/opencode",
  ".local/share/opencode",
  ".local/share/keyrings",
  ".password-store",
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".cargo/config.toml",
  ".cargo/config",
  ".gem/credentials",
  ".m2/settings.xml",
  ".gradle/gradle.properties",
  ".claude",
  ".claude.json",
  ".codex",
  ".pi",
  ".omp",
] as const;

/** File names that hold credentials wherever they are (inside a toolchain's root they are masked). */
export const SECRET_NAMES = new Set([
  "credentials",
  "credentials.toml",
  "credentials.json",
  ".credentials.json",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
  "auth.json",
  "hosts.yml",
  "token",
  ".token",
  "id_rsa",
  "id_ed25519",
  "id_ecdsa",
]);

/** The secret place of `home` that `path` is, lies in, or contains; null when it touches none. */
export function secretPlaceTouched(path: string, home: string): string | null {
  for (const place of SECRET_PLACES) {
    const full = join(home, place);
    if (isInside(path, full) || isInside(full, path)) return full;
  }
  return null;
}
