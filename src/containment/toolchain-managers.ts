/**
 * Version managers whose programs on PATH need more of the home than the PATH entry itself: each named once, with
 * the variable that says where its root is and the root's place in the home when the variable is unset. A contained
 * process gets a private HOME, so the variable is set to the real root for it (rustup would look in the private one).
 * A manager is in use when something on PATH resolves into its root, or (`program`) a PATH entry resolves to its
 * proxy binary, which no script text reveals.
 */
export interface ToolchainManager {
  readonly name: string;
  readonly variable: string;
  /** The root's place under the home when `variable` is unset. */
  readonly defaultRoot: string;
  /** A binary whose proxies (hard or symbolic links to it) find their toolchains through `variable`. */
  readonly program?: string;
  /**
   * Directories of the root the manager writes in ordinary use (pyenv rehashes its shims after every `pip install`,
   * and fails when it cannot): each process gets a throw-away copy of its own, writable.
   */
  readonly scratch?: readonly string[];
}

export const TOOLCHAIN_MANAGERS: readonly ToolchainManager[] = [
  { name: "rustup", variable: "RUSTUP_HOME", defaultRoot: ".rustup", program: "rustup" },
  { name: "pyenv", variable: "PYENV_ROOT", defaultRoot: ".pyenv", scratch: ["shims"] },
  { name: "rbenv", variable: "RBENV_ROOT", defaultRoot: ".rbenv", scratch: ["shims"] },
  { name: "goenv", variable: "GOENV_ROOT", defaultRoot: ".goenv", scratch: ["shims"] },
  { name: "nodenv", variable: "NODENV_ROOT", defaultRoot: ".nodenv", scratch: ["shims"] },
  { name: "asdf", variable: "ASDF_DATA_DIR", defaultRoot: ".asdf", scratch: ["shims"] },
  { name: "mise", variable: "MISE_DATA_DIR", defaultRoot: ".local/share/mise", program: "mise" },
  { name: "volta", variable: "VOLTA_HOME", defaultRoot: ".volta", program: "volta-shim" },
  { name: "nvm", variable: "NVM_DIR", defaultRoot: ".nvm" },
  { name: "fnm", variable: "FNM_DIR", defaultRoot: ".local/share/fnm" },
  { name: "sdkman", variable: "SDKMAN_DIR", defaultRoot: ".sdkman" },
  { name: "uv", variable: "UV_TOOL_DIR", defaultRoot: ".local/share/uv/tools" },
  { name: "uv python", variable: "UV_PYTHON_INSTALL_DIR", defaultRoot: ".local/share/uv/python" },
  { name: "pipx", variable: "PIPX_HOME", defaultRoot: ".local/share/pipx" },
  { name: "Homebrew", variable: "HOMEBREW_PREFIX", defaultRoot: ".linuxbrew" },
];
