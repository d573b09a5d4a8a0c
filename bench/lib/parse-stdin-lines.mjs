// A reference beside the ingestion anchor, reported and not judged: the least any reader of a JSONL stream pays,
// split on LF, each line decoded and given to JSON.parse, and nothing else (no schema, no events, no log).
// Prints the count of bytes and lines and the time from the first byte to the end, as count-stdin-bytes.mjs does.
let bytes = 0;
let lines = 0;
let first = null;
let pending = [];
process.stdin.on("data", (chunk) => {
  first ??= performance.now();
  bytes += chunk.length;
  let start = 0;
  for (;;) {
    const nl = chunk.indexOf(0x0a, start);
    if (nl === -1) {
      pending.push(chunk.subarray(start));
      break;
    }
    const part = chunk.subarray(start, nl);
    const line = pending.length > 0 ? Buffer.concat([...pending, part]) : part;
    pending = [];
    JSON.parse(line.toString("utf8"));
    lines += 1;
    start = nl + 1;
  }
});
process.stdin.on("end", () => {
  const readingMs = first === null ? 0 : performance.now() - first;
  process.stdout.write(`${JSON.stringify({ bytes, lines, readingMs })}\n`);
});
