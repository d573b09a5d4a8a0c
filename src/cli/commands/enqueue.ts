import { batchOrEnqueue } from "./batch.js";

/** `handoff enqueue FILE --redis URL`: `handoff batch FILE --redis URL` under the name of what it does. */
export async function command(args: readonly string[]): Promise<number> {
  return await batchOrEnqueue(args, "enqueue");
}
