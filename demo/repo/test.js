import { add } from "./math.js";

const cases = [
  [2, 2, 4],
  [0, 5, 5],
  [-1, 1, 0],
];
for (const [a, b, expected] of cases) {
  if (add(a, b) !== expected) {
    console.error(`FAIL: add(${a}, ${b}) = ${add(a, b)}, expected ${expected}`);
    process.exit(1);
  }
}
console.log(`ok: ${cases.length} cases`);
