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

/** What no process of a run may see: the source, handoff's own dirs, the user's home, /tmp, sockets, holdouts. */
export function hiddenPaths(places: HiddenPlaces): string[] {
  const home = process.env.HOME?.startsWith("/") ? process.env.HOME : homedir();
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
