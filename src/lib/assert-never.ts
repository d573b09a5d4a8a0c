/** Compile-time exhaustiveness for `switch` over a discriminated union. */
export function assertNever(value: never): never {
  throw new Error(`unexpected variant: ${JSON.stringify(value)}`);
}
