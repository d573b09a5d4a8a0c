/**
 * Terminal escape sequences (CSI such as colours and cursor moves, OSC such as titles and hyperlinks, two-character
 * escapes, and escapes with intermediate bytes such as cargo's `ESC ( B`) and the other control characters but
 * newline and tab.
 */
const TERMINAL_CONTROLS =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[ -/]*[0-~]|[\u0000-\u0008\u000b-\u001f\u007f]/g;

/** Text a program wrote for a terminal, as plain text: its colours and other controls taken out. */
export function plainText(text: string): string {
  return text.replace(TERMINAL_CONTROLS, "");
}

/** One line of a program's output as a terminal shows it: what follows its last carriage return, as plain text. */
export function shownLine(line: string): string {
  const cr = line.replace(/\r+$/u, "").lastIndexOf("\r");
  return plainText(cr >= 0 ? line.slice(cr + 1) : line);
}
