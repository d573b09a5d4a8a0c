import { homedir, tmpdir } from "node:os";
import { existingRealPath, isInside } from "../lib/paths.js";

export interface HiddenPlaces {
  readonly sourceTop: string;
  readonly runsDir: string;
  readonly workspacesDir: string;
  readonly cliHomesDir: string;
  /** Base environments and download caches: a process sees only the view or the cache it was given. */
  readonly cacheDir: string;
  /** The holdout files, read by handoff before the run. */
  readonly holdouts: readonly string[];
}

/** The user's home: $HOME when it is absolute, else the account's. */
export function userHome(): string {
  return process.env.HOME?.startsWith("/") ? process.env.HOME : homedir();
}

/** What no process of a run may see: the source, handoff's own dirs, the user's home, /tmp, sockets, holdouts. */
export function hiddenPaths(places: HiddenPlaces): string[] {
  const home = userHome();
  const hidden = [
    home,
    places.sourceTop,
    places.runsDir,
    places.workspacesDir,
    places.cliHomesDir,
    places.cacheDir,
    "/tmp",
    tmpdir(),
    // Sockets that reach past any namespace: the user's agents (ssh, gpg, dbus) and container engines.
    "/run/user",
    "/run/docker.sock",
    "/run/containerd",
    "/run/podman",
  ];
  // The held-out checks, read by handoff before the run, are never seen by the agent or the code under test:
  // hidden on their own where no hidden place already covers them.
  const realHidden = hidden.map((path) => existingRealPath(path) ?? path);
  const holdouts = places.holdouts.filter((path) => !realHidden.some((root) => isInside(path, root)));
  return [...hidden, ...holdouts];
}

/** An absolute path in free text: after a space, a quote, a bracket, `=` or `:` (`cat: /root/.npmrc: No such file`). */
const PATH_IN_TEXT = /(?:^|[\s'"`([<=:,])(\/[^\s'"`()[\]<>:,;]+)/gm;

/**
 * The absolute paths `text` names that lie in a hidden place and in none of the binds that show a part of one again
 * (the agent's workspace, home and CLI): at most `max`, each once, trailing punctuation dropped.
 */
export function hiddenPathsNamed(text: string, hidden: readonly string[], visible: readonly string[], max = 10): string[] {
  const roots = hidden.flatMap((path) => [path, existingRealPath(path) ?? path]).filter((path) => path !== "/");
  const named = new Set<string>();
  for (const match of text.matchAll(PATH_IN_TEXT)) {
    const path = match[1]!.replace(/[.!?]+$/, "").replace(/(.)\/+$/, "$1");
    if (!roots.some((root) => isInside(path, root)) || visible.some((dest) => isInside(path, dest))) continue;
    named.add(path);
    if (named.size >= max) break;
  }
  return [...named];
}
