import { displayPath } from "../../lib/fs-walk.js";
import type { PolicyFinding } from "./findings.js";
import { CONTROL, INVISIBLE, escapeControls } from "../../vocabulary/display.js";

/**
 * Names that must never reach a user's repository (docs/threat-model.md, rows N): traversal, absolute paths, anything git
 * or an OS would read as `.git`, invisible or control characters, bytes that are not UTF-8.
 */

const WINDOWS_RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i;

const ALL_INVISIBLE = new RegExp(INVISIBLE.source, "gu");

/**
 * A path component as Windows (NTFS stream suffix, then trailing dots and spaces) and macOS (ignorable code points,
 * case) reduce it when they compare names: what git's own `.git` and `.gitmodules` checks see.
 */
export function foldLikeNtfsAndHfs(component: string): string {
  return component
    .replace(ALL_INVISIBLE, "")
    .replace(/:.*$/u, "")
    .replace(/[. ]+$/u, "")
    .toLowerCase();
}

/** `.git` as git, Windows (8.3 short name, trailing dots/spaces, NTFS streams) or macOS (ignorables, case) reads it. */
function looksLikeGitDir(component: string): boolean {
  const folded = foldLikeNtfsAndHfs(component);
  return folded === ".git" || folded === "git~1";
}

/** Bytes 0x20–0x7e only: valid UTF-8 with no control or invisible character (the common case, checked cheaply). */
function isPrintableAscii(bytes: Buffer): boolean {
  for (const byte of bytes) if (byte < 0x20 || byte > 0x7e) return false;
  return true;
}

/**
 * A name no rule below can be about, told without decoding or folding it (the scan asks for every workspace entry):
 * one component of printable ASCII (valid UTF-8, no control or invisible character), not empty, `.` or `..`, and
 * with no `git` in it in any case, so that no fold of it reads as `.git` or `git~1`.
 */
function isPlainName(bytes: Buffer): boolean {
  const length = bytes.length;
  if (length === 0 || (bytes[0] === 0x2e && (length === 1 || (length === 2 && bytes[1] === 0x2e)))) return false;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i]!;
    if (byte < 0x20 || byte > 0x7e || byte === 0x2f) return false;
    // 0x20 set: the lower case of an ASCII letter.
    if ((byte | 0x20) === 0x67 && i + 2 < length && (bytes[i + 1]! | 0x20) === 0x69 && (bytes[i + 2]! | 0x20) === 0x74) return false;
  }
  return true;
}

export function checkPathName(bytes: Buffer): PolicyFinding[] {
  if (isPlainName(bytes)) return [];
  const ascii = isPrintableAscii(bytes);
  const text = ascii ? bytes.toString("latin1") : bytes.toString("utf8");
  if (!ascii && !Buffer.from(text, "utf8").equals(bytes)) {
    return [{ path: displayPath(bytes), rule: "non_utf8_name", message: "the name is not valid UTF-8" }];
  }
  const findings: PolicyFinding[] = [];
  if (CONTROL.test(text)) {
    findings.push({ path: escapeControls(text), rule: "control_character", message: "the name contains a control character" });
  }
  if (INVISIBLE.test(text)) {
    findings.push({
      path: escapeControls(text),
      rule: "invisible_character",
      message: "the name contains an invisible or bidi-control character",
    });
  }
  if (text.startsWith("/") || text.split("/").some((part) => part === "" || part === "." || part === "..")) {
    findings.push({ path: escapeControls(text), rule: "unsafe_path", message: "absolute path, empty, `.` or `..` component" });
  }
  if (text.split("/").some(looksLikeGitDir)) {
    findings.push({ path: escapeControls(text), rule: "git_metadata_path", message: "a component reads as `.git` on some filesystem" });
  }
  return findings;
}

/** Names Linux accepts but Windows would misread (backslash traversal, reserved device names, streams). */
export function windowsNameWarnings(path: string): PolicyFinding[] {
  const parts = path.split("/");
  const bad = path.includes("\\") || parts.some((part) => WINDOWS_RESERVED.test(part) || /[<>:"|?*]/u.test(part) || /[. ]$/u.test(part));
  return bad ? [{ path, rule: "windows_unsafe_name", message: "this name is unsafe or unusable on Windows" }] : [];
}

/** Raw path bytes as a person may safely see them: \xNN for non-UTF-8 bytes, then escapeControls. */
export function printablePath(bytes: Buffer): string {
  return escapeControls(displayPath(bytes));
}

/** Text for a terminal: every line escaped as by escapeControls, newlines and tabs kept. */
export function displayText(text: string): string {
  return text
    .split("\n")
    .map((line) => line.split("\t").map(escapeControls).join("\t"))
    .join("\n");
}

/** Case-folded NFC key: two paths with one key overwrite each other on macOS or Windows. */
export function collisionKey(path: string): string {
  return path.normalize("NFC").toLowerCase();
}

/**
 * Added paths that collide, after NFC and case folding, with another path of the resulting tree. Every directory
 * prefix counts too: `Src/a` collides with `src/b` at `src`. Only a prefix of an added path can be part of a new
 * collision, so a tree path is followed only as long as its prefixes share a key with one of them: at 80,000 paths
 * this costs a few milliseconds instead of folding all 600,000 prefixes.
 */
export function findCollisions(addedPaths: readonly string[], allPaths: Iterable<string>): PolicyFinding[] {
  if (addedPaths.length === 0) return []; // only an added path can make a new collision: the tree is not read
  const keyOf = componentKeyer();
  const spellings = new Map<string, Set<string>>();
  for (const path of addedPaths) forEachPrefix(path, keyOf, (_, key) => void spellings.set(key, new Set()));
  for (const path of allPaths) {
    forEachPrefix(path, keyOf, (prefix, key) => {
      const seen = spellings.get(key);
      if (!seen) return false; // no added path goes through here: nothing deeper can collide with one
      seen.add(prefix);
      return true;
    });
  }
  const findings: PolicyFinding[] = [];
  for (const path of addedPaths) {
    forEachPrefix(path, keyOf, (prefix, key) => {
      const other = [...spellings.get(key)!].find((spelling) => spelling !== prefix);
      if (other === undefined) return true;
      findings.push({ path, rule: "case_collision", message: `collides with ${other} after case folding or Unicode normalization` });
      return false;
    });
  }
  return findings;
}

/** collisionKey of path components, cached: directory names repeat across thousands of paths. */
function componentKeyer(): (component: string) => string {
  const keys = new Map<string, string>();
  return (component) => {
    let key = keys.get(component);
    if (key === undefined) {
      key = collisionKey(component);
      keys.set(component, key);
    }
    return key;
  };
}

/** Calls `visit` with each prefix of a path (`a`, `a/b`, `a/b/c`) and its key, until `visit` returns false. */
function forEachPrefix(path: string, keyOf: (component: string) => string, visit: (prefix: string, key: string) => boolean | void): void {
  let key = "";
  let start = 0;
  for (;;) {
    const slash = path.indexOf("/", start);
    const end = slash === -1 ? path.length : slash;
    const componentKey = keyOf(path.slice(start, end));
    key = start === 0 ? componentKey : `${key}/${componentKey}`;
    if (visit(path.slice(0, end), key) === false || slash === -1) return;
    start = slash + 1;
  }
}
