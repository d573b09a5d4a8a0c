import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { readFileSafely } from "./safe-read.js";

let cachedRoot: string | null | undefined;

/** handoff's package directory: the nearest folder above this module with handoff's package.json (src/ or dist/src/). */
export function packageRoot(): string | null {
  if (cachedRoot !== undefined) return cachedRoot;
  cachedRoot = null;
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if (packageName(join(dir, "package.json")) === "agent-handoff") {
      cachedRoot = dir;
      break;
    }
  }
  return cachedRoot;
}

const PackageName = z.looseObject({ name: z.string() });

function packageName(manifest: string): string | null {
  const read = readFileSafely(manifest, 64 * 1024);
  if (read.kind !== "bytes") return null;
  try {
    const parsed = PackageName.safeParse(JSON.parse(read.bytes.toString("utf8")));
    return parsed.success ? parsed.data.name : null;
  } catch {
    return null;
  }
}
