/**
 * Text filled into lines of at most `width` characters, words kept whole: the first line `firstWidth` wide (what is
 * left beside a label), the others `width`. A word longer than a line has one of its own.
 */
export function fill(text: string, firstWidth: number, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/u).filter(Boolean)) {
    const room = lines.length === 0 ? firstWidth : width;
    if (line !== "" && line.length + 1 + word.length > room) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "" || lines.length === 0) lines.push(line);
  return lines;
}
