import { createRequire } from "node:module";

const requireBuiltin = createRequire(import.meta.url);

/**
 * One of Node's own modules, loaded at the first call instead of at start-up: node:http, node:https and node:dns load
 * tls, crypto's ciphers, dgram and a score more of Node's internals, ~5-10 ms of every run's start before its first
 * phase, and only the egress gate and the model forwarder (opened when a sandboxed process starts) use them.
 */
export function builtinOnUse<T>(name: `node:${string}`): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= requireBuiltin(name) as T);
}
