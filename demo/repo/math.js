// A tiny library with a bug: add() subtracts.
export function add(a, b) {
  return a - b;
}
