import { join, resolve, sep } from "node:path";
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
  const { places, firstNames, normal } = placesOf(home);
  // Below the home, only a path whose first name there starts a secret place can touch one (the mask walk asks
  // this of thousands of entries of a toolchain's root).
  if (normal && path !== home && isInside(path, home)) {
    const rest = path.slice(home.endsWith(sep) ? home.length : home.length + 1);
    if (!firstNames.has(rest.split(sep, 1)[0]!)) return null;
  }
  for (const full of places) {
    if (isInside(path, full) || isInside(full, path)) return full;
  }
  return null;
}

interface JoinedPlaces {
  readonly home: string;
  readonly places: readonly string[];
  /** The first name of each place (".config" of ".config/gh"). */
  readonly firstNames: ReadonlySet<string>;
  /** Whether `home` is already absolute and normalized, so that a place is `home` + `/` + its name. */
  readonly normal: boolean;
}

let joinedFor: JoinedPlaces | null = null;

/** SECRET_PLACES joined to `home`, once per home: the mask walk asks for thousands of entries with the same one. */
function placesOf(home: string): JoinedPlaces {
  if (joinedFor?.home !== home) {
    joinedFor = {
      home,
      places: SECRET_PLACES.map((place) => join(home, place)),
      firstNames: new Set(SECRET_PLACES.map((place) => place.split("/", 1)[0]!)),
      normal: resolve(home) === home,
    };
  }
  return joinedFor;
}
