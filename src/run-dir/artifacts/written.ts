/**
 * An artifact's value as its writer builds it from the schema its readers parse with: every array and object
 * read-only, and only the keys the schema names (a `looseObject` reads unknown keys through, as an index signature
 * of `unknown`; a writer adds none). A `z.record` keeps its keys.
 */
export type Written<T> = T extends (infer E)[]
  ? readonly Written<E>[]
  : T extends object
    ? { readonly [K in keyof T as string extends K ? (unknown extends T[K] ? never : K) : K]: Written<T[K]> }
    : T;
