/**
 * A Rust source file's inline test modules (`#[cfg(test)] mod tests { … }`), found by brace matching over the file
 * with its comments, strings, raw strings and char literals skipped (issue 27 item 4). The run held to the base puts
 * the base's test modules back into the patched file, so that a patch which fixes `src/lib.rs` cannot also
 * `#[ignore]` or delete the tests in it (docs/verification.md, "What is held to the base"). Pure: text in, text out.
 */

/** An attribute, `#[…]` or `#![…]`, as written but without whitespace: `#[cfg(test)]`, `#[should_panic(expected="x")]`. */
type Attribute = string;

/** A `mod NAME { … }` with a body, test module or not. */
export interface RustModule {
  /** `tests`, or `outer::tests` for a module inside `mod outer { … }`. */
  readonly path: string;
  /** Whether its attributes hold a cfg that needs `test` (`cfg(test)`, `cfg(all(test, unix))`; not `cfg(not(test))`). */
  readonly test: boolean;
  /** Where its text starts (its first outer attribute, else `pub`/`mod`) and ends (after its `}`). */
  readonly start: number;
  readonly end: number;
  /** Where its closing `}` is: a test module the patch deleted from inside this one comes back just before it. */
  readonly close: number;
}

export interface RustTestLayout {
  /** Every module with a body, outermost first; none is listed from inside a test module. */
  readonly modules: readonly RustModule[];
  /** The test attributes outside the test modules (`#[test]`, `#[ignore]`, `#[cfg(test)] mod x;`…), in order. */
  readonly outsideTestAttributes: readonly Attribute[];
  /** `#[cfg(test)] mod NAME;`: modules of tests kept in a file of their own. */
  readonly testModuleFiles: readonly string[];
}

type Token =
  | { readonly kind: "attribute"; readonly start: number; readonly text: Attribute }
  | { readonly kind: "word"; readonly start: number; readonly text: string }
  | { readonly kind: "punct"; readonly start: number; readonly text: string };

const IDENT_START = /[\p{XID_Start}_]/u;
const IDENT_CONTINUE = /[\p{XID_Continue}]/u;

/** The file's modules and its test attributes outside them, or null when it does not scan (an open string or comment, unmatched braces). */
export function rustTestLayout(text: string): RustTestLayout | null {
  const tokens = tokenize(text);
  return tokens === null ? null : layoutOf(tokens);
}

/** Whether a piece of Rust text names a test attribute at all (for a file that does not scan). */
export function mentionsTests(text: string): boolean {
  return /#!?\[\s*(?:[\w:]*test|ignore|should_panic|cfg(?:_attr)?\s*\([^\]]*\btest\b)/u.test(text);
}

/**
 * The patched file with its test modules as the base has them: each test module replaced by the base's of the same
 * path, one the patch deleted put back (before its parent's `}`, or at the end of the file), one the patch added
 * removed. `unchanged` when the test modules are the same on both sides; `not_isolated` when the patch changed test
 * attributes outside them (a `#[test]` fn at the top level, a `#[cfg(test)]` on `mod x;`), or a side does not scan.
 */
export type HeldTests =
  | { readonly kind: "unchanged" }
  | { readonly kind: "held"; readonly text: string; readonly modules: readonly string[] }
  | { readonly kind: "not_isolated"; readonly why: string };

export function holdTestModules(base: string, patched: string): HeldTests {
  const before = rustTestLayout(base);
  const after = rustTestLayout(patched);
  if (before === null || after === null) {
    if (!mentionsTests(base) && !mentionsTests(patched)) return { kind: "unchanged" };
    return { kind: "not_isolated", why: `its ${before === null ? "base" : "patched"} text could not be read for its test modules` };
  }
  if (!sameList(before.outsideTestAttributes, after.outsideTestAttributes))
    return { kind: "not_isolated", why: "the patch changes test attributes outside its #[cfg(test)] modules" };
  const baseTests = new Map(before.modules.filter((module) => module.test).map((module) => [module.path, module]));
  const patchedTests = new Map(after.modules.filter((module) => module.test).map((module) => [module.path, module]));
  const edits: { at: number; end: number; text: string }[] = [];
  const changed = new Set<string>();
  for (const [path, module] of patchedTests) {
    const held = baseTests.get(path);
    const heldText = held ? base.slice(held.start, held.end) : "";
    if (heldText === patched.slice(module.start, module.end)) continue;
    changed.add(path);
    edits.push({ at: module.start, end: module.end, text: heldText });
  }
  for (const [path, module] of baseTests) {
    if (patchedTests.has(path)) continue;
    const parentPath = path.includes("::") ? path.slice(0, path.lastIndexOf("::")) : null;
    const parent = parentPath === null ? null : after.modules.find((candidate) => candidate.path === parentPath);
    if (parentPath !== null && !parent) return { kind: "not_isolated", why: `the patch removes mod ${parentPath}, which holds tests` };
    const at = parent ? parent.close : patched.length;
    changed.add(path);
    edits.push({ at, end: at, text: `\n${base.slice(module.start, module.end)}\n` });
  }
  if (edits.length === 0) return { kind: "unchanged" };
  let text = patched;
  for (const edit of edits.sort((a, b) => b.at - a.at || b.end - a.end)) text = text.slice(0, edit.at) + edit.text + text.slice(edit.end);
  return { kind: "held", text, modules: [...changed].sort() };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item, index) => item === b[index]);
}

/** A cfg predicate that needs `test` to hold: `test` outside every `not(…)`. */
function needsTest(attribute: Attribute): boolean {
  const cfg = /^#\[cfg\((.*)\)\]$/u.exec(attribute)?.[1];
  if (cfg === undefined) return false;
  let positive = cfg;
  for (let previous = ""; previous !== positive; ) {
    previous = positive;
    positive = positive.replace(/\bnot\([^()]*\)/gu, "");
  }
  return /\btest\b/u.test(positive);
}

/** A test attribute: a test (`#[test]`, `#[tokio::test]`), `#[ignore]`, `#[should_panic]`, or a cfg that names `test`. */
function isTestAttribute(attribute: Attribute): boolean {
  return /^#!?\[(?:(?:\w+::)*test\b|ignore\b|should_panic\b|cfg(?:_attr)?\(.*\btest\b)/u.test(attribute);
}

/** The modules and outside test attributes, read from the tokens with a stack of open braces. */
function layoutOf(tokens: readonly Token[]): RustTestLayout | null {
  const modules: RustModule[] = [];
  const outsideTestAttributes: Attribute[] = [];
  const testModuleFiles: string[] = [];
  // Each open brace: the module it opens (with where its text started), or null for any other block.
  const open: ({ path: string; test: boolean; start: number } | null)[] = [];
  // The outer attributes since the last item, and how many of them were counted as outside test attributes.
  let pending: { start: number; attributes: Attribute[]; counted: number } | null = null;
  let insideTest = 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.kind === "attribute") {
      const outside = insideTest === 0 && isTestAttribute(token.text);
      if (outside) outsideTestAttributes.push(token.text);
      if (!token.text.startsWith("#!")) {
        pending ??= { start: token.start, attributes: [], counted: 0 };
        pending.attributes.push(token.text);
        if (outside) pending.counted++;
      }
      continue;
    }
    if (token.kind === "word" && token.text === "mod" && tokens[i + 1]?.kind === "word") {
      const name = tokens[i + 1]!.text;
      const after = tokens[i + 2];
      const test = (pending?.attributes ?? []).some(needsTest);
      if (after?.text === ";" && test && insideTest === 0) testModuleFiles.push(name);
      if (after?.kind === "punct" && after.text === "{") {
        const parent = lastModule(open);
        const path = parent ? `${parent.path}::${name}` : name;
        open.push({ path, test: test || insideTest > 0, start: pending?.start ?? moduleStart(tokens, i) });
        // A test module's own attributes are part of its text (held with it), not test attributes outside it.
        if (test && insideTest === 0 && pending) outsideTestAttributes.splice(outsideTestAttributes.length - pending.counted);
        if (test || insideTest > 0) insideTest++;
        pending = null;
        i += 2;
        continue;
      }
    }
    if (token.kind === "word" && (token.text === "pub" || token.text === "crate" || token.text === "in" || token.text === "super"))
      continue;
    if (token.kind === "punct" && (token.text === "(" || token.text === ")")) continue;
    pending = null;
    if (token.kind !== "punct") continue;
    if (token.text === "{") open.push(null);
    else if (token.text === "}") {
      if (open.length === 0) return null;
      const entry = open.pop()!;
      if (entry === null) continue;
      if (entry.test) insideTest--;
      // A module inside a test module is part of that module's text: only the outermost is listed.
      if (!entry.test || insideTest === 0) {
        modules.push({ path: entry.path, test: entry.test, start: entry.start, end: token.start + 1, close: token.start });
      }
    }
  }
  if (open.length > 0) return null;
  modules.sort((a, b) => a.start - b.start);
  return { modules, outsideTestAttributes, testModuleFiles };
}

function lastModule<T>(open: readonly (T | null)[]): T | null {
  for (let i = open.length - 1; i >= 0; i--) if (open[i] !== null) return open[i]!;
  return null;
}

/** Where a module without attributes starts: at `pub`/`pub(crate)` before `mod`, else at `mod`. */
function moduleStart(tokens: readonly Token[], modIndex: number): number {
  let i = modIndex;
  while (i > 0) {
    const previous = tokens[i - 1]!;
    if (previous.kind === "word" && ["pub", "crate", "in", "super", "self"].includes(previous.text)) i--;
    else if (previous.kind === "punct" && (previous.text === "(" || previous.text === ")")) i--;
    else break;
  }
  // Parentheses only belong to the module when a `pub` starts them.
  while (i < modIndex && tokens[i]!.text !== "pub" && tokens[i]!.text !== "mod") i++;
  return tokens[i]!.start;
}

/** The file's attributes, words and punctuation, with comments, strings and literals skipped; null when one is not closed. */
function tokenize(text: string): Token[] | null {
  const tokens: Token[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    if (c === "/" && text[i + 1] === "/") {
      const newline = text.indexOf("\n", i);
      i = newline === -1 ? n : newline + 1;
    } else if (c === "/" && text[i + 1] === "*") {
      const end = blockCommentEnd(text, i);
      if (end === null) return null;
      i = end;
    } else if (c === '"') {
      const end = stringEnd(text, i);
      if (end === null) return null;
      i = end;
    } else if (c === "'") {
      i = charEnd(text, i);
    } else if (c === "#" && (text[i + 1] === "[" || (text[i + 1] === "!" && text[i + 2] === "["))) {
      const end = attributeEnd(text, i);
      if (end === null) return null;
      tokens.push({ kind: "attribute", start: i, text: text.slice(i, end).replace(/\s+/gu, "") });
      i = end;
    } else if (IDENT_START.test(c)) {
      const raw = rawStringEnd(text, i);
      if (raw === null) return null;
      if (raw !== undefined) {
        i = raw;
        continue;
      }
      let end = i + 1;
      while (end < n && IDENT_CONTINUE.test(text[end]!)) end++;
      const word = text.slice(i, end);
      // b"…", c"…", b'…': the literal is read next round.
      tokens.push({ kind: "word", start: i, text: word });
      i = end;
    } else if (/\s/u.test(c)) {
      i++;
    } else {
      tokens.push({ kind: "punct", start: i, text: c });
      i++;
    }
  }
  return tokens;
}

/** After a nested `/* … *\/` comment, or null when it is not closed. */
function blockCommentEnd(text: string, start: number): number | null {
  let depth = 0;
  for (let i = start; i < text.length - 1; i++) {
    if (text[i] === "/" && text[i + 1] === "*") {
      depth++;
      i++;
    } else if (text[i] === "*" && text[i + 1] === "/") {
      depth--;
      i++;
      if (depth === 0) return i + 1;
    }
  }
  return null;
}

/** After a `"…"` string with its escapes, or null when it is not closed. */
function stringEnd(text: string, start: number): number | null {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === '"') return i + 1;
  }
  return null;
}

/** After a char literal (`'a'`, `'\n'`, `'\u{1F600}'`, `'{'`), or just after the `'` of a lifetime (`'a`, `'static`). */
function charEnd(text: string, start: number): number {
  if (text[start + 1] === "\\") {
    const close = text.indexOf("'", start + 3);
    return close === -1 ? start + 1 : close + 1;
  }
  const codePoint = text.codePointAt(start + 1);
  if (codePoint === undefined) return start + 1;
  const width = codePoint > 0xffff ? 2 : 1;
  return text[start + 1 + width] === "'" ? start + 2 + width : start + 1;
}

/** After a raw string starting at `i` (`r"…"`, `r#"…"#`, `br##"…"##`, `cr"…"`); undefined when none starts there; null when it is not closed. */
function rawStringEnd(text: string, i: number): number | null | undefined {
  const match = /^(?:b|c)?r(#*)"/u.exec(text.slice(i, i + 260));
  if (!match) return undefined;
  const close = `"${match[1]}`;
  const end = text.indexOf(close, i + match[0].length);
  return end === -1 ? null : end + close.length;
}

/** After the `]` that closes an attribute (its brackets matched, its strings skipped), or null. */
function attributeEnd(text: string, start: number): number | null {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      const end = stringEnd(text, i);
      if (end === null) return null;
      i = end - 1;
    } else if (c === "[") depth++;
    else if (c === "]") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return null;
}
