// The ingestion benchmark's anchor: the least a Node process can do with an agent's stream, read it and count its
// bytes. Prints the count and the time from the first byte to the end, so the bench can check that the whole
// stream went through and time the reading alone.
let bytes = 0;
let first = null;
process.stdin.on("data", (chunk) => {
  first ??= performance.now();
  bytes += chunk.length;
});
process.stdin.on("end", () => {
  const readingMs = first === null ? 0 : performance.now() - first;
  process.stdout.write(`${JSON.stringify({ bytes, readingMs })}\n`);
});
