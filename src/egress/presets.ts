/**
 * The registry presets of `--allow-net` (and of setup inference): for each ecosystem, the hosts its package manager
 * fetches from by default to install, nothing else. A mirror or a private registry is named with `--allow-net HOST`.
 */
export const NETWORK_PRESETS = {
  /** npm, yarn (classic and berry), pnpm: the registry and its tarballs (yarn's registry is a CNAME of npm's). */
  npm: ["registry.npmjs.org", "registry.yarnpkg.com", "repo.yarnpkg.com"],
  /** pip, uv, poetry, pipenv, pdm: the index and the files it links to. */
  pypi: ["pypi.org", "files.pythonhosted.org"],
  /** cargo: the sparse index (the default since 1.70), the download CDN and the API the git index names. */
  crates: ["index.crates.io", "static.crates.io", "crates.io"],
  /** go: the module proxy and the checksum database (GOPROXY and GOSUMDB defaults); the proxy serves the zips itself. */
  go: ["proxy.golang.org", "sum.golang.org"],
  /** GitHub: clones over HTTPS, its API, archives, release assets and raw files. */
  github: [
    "github.com",
    "api.github.com",
    "codeload.github.com",
    "objects.githubusercontent.com",
    "raw.githubusercontent.com",
    "release-assets.githubusercontent.com",
  ],
} as const satisfies Record<string, readonly string[]>;

export type PresetName = keyof typeof NETWORK_PRESETS;

export const PRESET_NAMES = Object.keys(NETWORK_PRESETS) as PresetName[];

export function isPresetName(name: string): name is PresetName {
  return Object.hasOwn(NETWORK_PRESETS, name);
}
