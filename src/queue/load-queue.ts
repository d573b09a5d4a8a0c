import { QueuePackagesMissingError } from "../lib/errors.js";

/** The versions the queue is tested with: package.json's devDependencies (and within its peerDependencies; a test checks). */
export const QUEUE_PACKAGES = { bullmq: "6.7.0", ioredis: "6.0.0" } as const;

/**
 * `agent-handoff/queue` loaded when a command needs it (`handoff worker`, `handoff batch --redis`): BullMQ and its Redis
 * client are optional peer dependencies, so a missing one is a one-line error that says what to install.
 */
export async function loadQueue(): Promise<typeof import("./index.js")> {
  try {
    return await import("./index.js");
  } catch (error) {
    const missing = missingPackage(error);
    if (missing === null) throw error;
    const install = `npm install ${Object.entries(QUEUE_PACKAGES)
      .map(([name, version]) => `${name}@${version}`)
      .join(" ")}`;
    throw new QueuePackagesMissingError(missing, install);
  }
}

/** The queue package an import failed to find, or null for any other failure. */
function missingPackage(error: unknown): string | null {
  if ((error as NodeJS.ErrnoException)?.code !== "ERR_MODULE_NOT_FOUND") return null;
  const named = /Cannot find package '([^']+)'/.exec((error as Error).message)?.[1];
  return named !== undefined && Object.hasOwn(QUEUE_PACKAGES, named) ? named : null;
}
