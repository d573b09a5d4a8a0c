import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { execa } from "execa";
import { tempDir } from "./repo.js";

/**
 * Debian's `chromium`, headless, for the HTML report's tests. Without it those tests skip, unless
 * HANDOFF_BROWSER_TESTS=required (CI, .ci/run), where they fail.
 */
export const chromium: { readonly ok: boolean; readonly reason: string } = await (async () => {
  const probe = await execa("chromium", ["--version"], { reject: false, timeout: 60_000 });
  if (probe.failed) return { ok: false, reason: `chromium is not usable here (${probe.shortMessage})` };
  return { ok: true, reason: probe.stdout.trim() };
})();
if (!chromium.ok && process.env.HANDOFF_BROWSER_TESTS === "required") throw new Error(`chromium is required here: ${chromium.reason}`);

/**
 * One headless page load of `file` with `flags`: root needs --no-sandbox; a profile of its own per call; the browser's
 * own background traffic (updates, sign-in) turned off, and every host name resolving to nothing.
 */
async function load(file: string, flags: readonly string[]): Promise<string> {
  const profile = tempDir("handoff-chromium");
  const outcome = await execa(
    "chromium",
    [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-default-apps",
      "--host-resolver-rules=MAP * ~NOTFOUND",
      `--user-data-dir=${join(profile, "profile")}`,
      ...flags,
      pathToFileURL(file).href,
    ],
    { timeout: 90_000, maxBuffer: 64 * 1024 * 1024 },
  );
  return outcome.stdout;
}

/** The DOM after the page has loaded and rendered, serialised (`--dump-dom`). */
export function dumpDom(file: string): Promise<string> {
  return load(file, ["--dump-dom"]);
}

/** A PNG of the page in a window of `width` x `height`. */
export async function screenshot(file: string, png: string, width: number, height: number): Promise<void> {
  await load(file, [`--screenshot=${png}`, `--window-size=${width},${height}`, "--hide-scrollbars"]);
}

/** The host names of chromium's own background requests, which it makes for any page (even with the switches above). */
const BROWSER_OWN = /(^|\.)(google\.com|googleapis\.com|gvt1\.com)$/u;

/**
 * Every network URL requested while chromium loaded `file` (from its net log), except the browser's own background
 * requests: what the page itself asked for.
 */
export async function pageRequests(file: string): Promise<string[]> {
  const log = join(tempDir("handoff-netlog"), "net.json");
  await load(file, ["--dump-dom", `--log-net-log=${log}`]);
  const urls = new Set<string>();
  for (const match of readFileSync(log, "utf8").matchAll(/"url":"([^"]*)"/gu)) urls.add(match[1]!);
  return [...urls].filter((url) => {
    if (!/^(https?|wss?|ftp):/u.test(url)) return false;
    return !BROWSER_OWN.test(new URL(url).hostname);
  });
}
