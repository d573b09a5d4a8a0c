/**
 * The interleaved sampler of docs/performance.md: the methods of a group run round-robin, the start rotating each round,
 * each sample after an untimed `prep`. On a shared, noisy machine a drift then hits both sides of a ratio alike.
 */
export async function interleave(methods, rounds) {
  const samples = methods.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < methods.length; k++) {
      const index = (round + k) % methods.length;
      const method = methods[index];
      await method.prep?.();
      const started = process.hrtime.bigint();
      await method.run();
      samples[index].push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  }
  return Object.fromEntries(methods.map((method, index) => [method.name, summarize(samples[index])]));
}

export function summarize(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  return { median: round(median), min: round(sorted[0]), max: round(sorted.at(-1)), n: sorted.length };
}

function round(ms) {
  return Math.round(ms * 10) / 10;
}
