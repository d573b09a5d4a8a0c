/**
 * Path globs for `--allow` / `--deny`. fast-glob matches files on disk; a policy must also judge deleted paths,
 * so handoff matches path strings itself. Semantics (docs/gates.md): `*` and `?` stay inside one segment,
 * `**` spans segments, `{a,b}` alternates, `[...]` is a class; a pattern without `/` matches the last segment
 * at any depth (`*.md`); a pattern ending in `/` matches everything below that directory.
 */
export function globToRegExp(pattern: string): RegExp {
  let glob = pattern.startsWith("./") ? pattern.slice(2) : pattern;
  if (glob.endsWith("/")) glob += "**";
  const anchored = glob.includes("/");
  let source = "";
  let braceDepth = 0;
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]!;
    if (ch === "*") {
      if (glob[i + 1] === "*") {
        const slashAfter = glob[i + 2] === "/";
        source += slashAfter ? "(?:.*/)?" : ".*";
        i += slashAfter ? 2 : 1;
      } else {
        source += "[^/]*";
      }
    } else if (ch === "?") {
      source += "[^/]";
    } else if (ch === "[") {
      const close = glob.indexOf("]", i + 1);
      if (close === -1) {
        source += "\\[";
      } else {
        const body = glob.slice(i + 1, close).replace(/^!/, "^").replace(/\\/g, "\\\\");
        source += `[${body}]`;
        i = close;
      }
    } else if (ch === "{") {
      braceDepth++;
      source += "(?:";
    } else if (ch === "}" && braceDepth > 0) {
      braceDepth--;
      source += ")";
    } else if (ch === "," && braceDepth > 0) {
      source += "|";
    } else {
      source += ch.replace(/[.+^${}()|\\/]/g, "\\$&");
    }
  }
  return new RegExp(anchored ? `^${source}$` : `^(?:.*/)?${source}$`, "u");
}

export function matchesAnyGlob(path: string, patterns: readonly RegExp[]): boolean {
  return patterns.some((pattern) => pattern.test(path));
}
