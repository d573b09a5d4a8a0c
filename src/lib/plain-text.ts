/**
 * Terminal escape sequences (CSI such as colours and cursor moves, OSC such as titles and hyperlinks, two-character
 * escapes) and the other control characters but newline and tab.
 */
const TERMINAL_CONTROLS =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]|[\u0000-\u0008\u000b-\u001f\u007f]/g;

/** Text a program wrote for a terminal, as plain text: its colours and other controls taken out. */
export function plainText(text: string): string {
  return text.replace(TERMINAL_CONTROLS, "");
}
