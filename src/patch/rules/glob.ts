/**
 * Path globs for `--allow` / `--deny`. fast-glob matches files on disk; a policy must also judge deleted paths,
 * so handoff matches path strings itself. Semantics (docs/gates.md): `*` and `?` stay inside one segment,
 * `**` spans segments, `{a,b}` alternates, `[...]` is a class; a pattern without `/` matches the last segment
 * at any depth (`*.md`); a leading `/` anchors at the repository root (`/.env`); a pattern ending in `/` matches
 * everything below that directory. A class never matches `/`; a `{` without its `}` is literal.
 */
export function globToRegExp(pattern: string): RegExp {
  const rooted = pattern.startsWith("/") || pattern.startsWith("./");
  let glob = pattern.startsWith("./") ? pattern.slice(2) : pattern.replace(/^\/+/u, "");
  if (glob.endsWith("/")) glob += "**";
  const anchored = rooted || glob.includes("/");
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
        const body = glob.slice(i + 1, close).replace(/\\/g, "\\\\");
        source += /^[!^]/u.test(body) ? `[^/${body.slice(1)}]` : `(?!/)[${body}]`;
        i = close;
      }
    } else if (ch === "{" && hasClosingBrace(glob, i)) {
      braceDepth++;
      source += "(?:";
    } else if (ch === "}" && braceDepth > 0) {
      braceDepth--;
      source += ")";
    } else if (ch === "," && braceDepth > 0) {
      source += "|";
    } else {
      source += ch.replace(/[.+^${}()|[\]\\/]/g, "\\$&");
    }
  }
  return new RegExp(anchored ? `^${source}$` : `^(?:.*/)?${source}$`, "u");
}

/** Whether the `{` at `open` has a matching `}` (braces nest). */
function hasClosingBrace(glob: string, open: number): boolean {
  let depth = 0;
  for (let i = open; i < glob.length; i++) {
    if (glob[i] === "{") depth++;
    else if (glob[i] === "}" && --depth === 0) return true;
  }
  return false;
}

export function matchesAnyGlob(path: string, patterns: readonly RegExp[]): boolean {
  return patterns.some((pattern) => pattern.test(path));
}
