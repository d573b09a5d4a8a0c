// The one escape for what handoff prints (docs/threat-model.md P4): the control and invisible characters of a path
// or a line, shown instead of obeyed.

/** Code points HFS+ ignores, plus bidi controls (Trojan Source): U+200B–U+200F, U+202A–U+202E, U+2060–U+206F, U+FEFF. */
export const INVISIBLE = /[\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\u00ad]/u;
/** C0 and C1 controls. */
export const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;
const ALL_INVISIBLE = new RegExp(INVISIBLE.source, "gu");

/**
 * C0/C1 controls as \xNN, invisible and bidi-control characters as \uNNNN, so a path can be printed on a terminal
 * without acting on it or passing for another name (`.g\u200cit`, Trojan Source reordering).
 */
export function escapeControls(text: string): string {
  return text
    .replace(new RegExp(CONTROL.source, "gu"), (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .replace(ALL_INVISIBLE, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
