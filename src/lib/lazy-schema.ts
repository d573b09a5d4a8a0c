import { z } from "zod";

/**
 * A schema built on its first use instead of at module load (zod's `z.lazy`, which keeps what it built): a run
 * loads every backend's modules but reads one backend's stream, and building all their schemas at start-up cost
 * milliseconds of every run. Parses, errors and inferred types are those of the schema `build` returns.
 */
export function lazySchema<T extends z.ZodType>(build: () => T): z.ZodLazy<T> {
  return z.lazy(build);
}
