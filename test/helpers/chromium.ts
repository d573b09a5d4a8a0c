import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
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

/** Headless, as root (--no-sandbox), with none of the browser's own background traffic (updates, sign-in). */
const QUIET_HEADLESS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-default-apps",
] as const;

/**
 * One headless page load of `file` with `flags`: root needs --no-sandbox; a profile of its own per call; the browser's
 * own background traffic (updates, sign-in) turned off, and every host name resolving to nothing.
 */
async function load(file: string, flags: readonly string[]): Promise<string> {
  const profile = tempDir("handoff-chromium");
  const outcome = await execa(
    "chromium",
    [
      ...QUIET_HEADLESS,
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

/** How a page is viewed: its viewport's width and height in CSS pixels, and the colour scheme the reader prefers. */
export interface View {
  readonly width: number;
  readonly height: number;
  readonly scheme: "light" | "dark";
}

/** What a page laid out in a View measures: its widths, and the elements wider than the viewport that do not scroll inside their own box. */
export interface Layout {
  readonly viewportWidth: number;
  readonly scrollWidth: number;
  readonly prefersDark: boolean;
  readonly background: string;
  readonly overflowing: readonly string[];
}

/** Elements that reach past the viewport's right edge, and are not inside a box that scrolls or clips them. */
const LAYOUT = `(() => {
  const width = document.documentElement.clientWidth;
  const clipped = (el) => {
    for (let up = el.parentElement; up; up = up.parentElement) {
      const overflow = getComputedStyle(up).overflowX;
      if (overflow === "auto" || overflow === "scroll" || overflow === "hidden") return up.getBoundingClientRect().right <= width + 0.5;
    }
    return false;
  };
  const overflowing = [...document.body.querySelectorAll("*")]
    .filter((el) => el.getBoundingClientRect().right > width + 0.5 && !clipped(el))
    .map((el) => el.tagName.toLowerCase() + (el.className ? "." + String(el.className).split(" ").join(".") : ""));
  return {
    viewportWidth: width,
    scrollWidth: document.documentElement.scrollWidth,
    prefersDark: matchMedia("(prefers-color-scheme: dark)").matches,
    background: getComputedStyle(document.body).backgroundColor,
    overflowing: [...new Set(overflowing)],
  };
})()`;

/**
 * `file` loaded in headless chromium driven over the DevTools protocol (on a pipe: `--remote-debugging-pipe`), at the
 * View's width (emulated: a headless window is never narrower than 500 px) and colour scheme; returns its Layout and,
 * with `png`, writes a screenshot of the viewport there. The page's own CSP stays on: the measuring runs as DevTools'.
 */
export async function viewPage(file: string, view: View, png?: string): Promise<Layout> {
  const profile = tempDir("handoff-chromium");
  const browser = spawn(
    "chromium",
    [
      ...QUIET_HEADLESS,
      "--hide-scrollbars",
      "--host-resolver-rules=MAP * ~NOTFOUND",
      `--user-data-dir=${join(profile, "profile")}`,
      "--remote-debugging-pipe",
      "about:blank",
    ],
    // Its own process group: the renderer and utility processes go with the browser, and stop writing to the profile.
    { stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"], detached: true },
  );
  // Or its spawn failed ('error', no 'exit'): the finally below must not wait for an exit that never comes.
  const exited = new Promise((resolve) => {
    browser.once("exit", resolve);
    browser.once("error", resolve);
  });
  const cdp = new PipeSession(browser.stdio[3] as Writable, browser.stdio[4] as Readable);
  try {
    const { targetId } = await cdp.send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await cdp.send("Target.attachToTarget", { targetId, flatten: true });
    const page = (method: string, params: Record<string, unknown> = {}) => cdp.send(method, params, sessionId as string);
    await page("Page.enable");
    await page("Emulation.setDeviceMetricsOverride", { width: view.width, height: view.height, deviceScaleFactor: 1, mobile: false });
    await page("Emulation.setEmulatedMedia", { features: [{ name: "prefers-color-scheme", value: view.scheme }] });
    const loaded = cdp.event("Page.loadEventFired", sessionId as string);
    await page("Page.navigate", { url: pathToFileURL(file).href });
    await loaded;
    const measured = await page("Runtime.evaluate", { expression: LAYOUT, returnByValue: true });
    if (png) {
      const shot = await page("Page.captureScreenshot", { format: "png" });
      writeFileSync(png, Buffer.from(shot.data as string, "base64"));
    }
    return (measured.result as { value: Layout }).value;
  } finally {
    await cdp.send("Browser.close").catch(() => undefined);
    try {
      process.kill(-browser.pid!, "SIGKILL");
    } catch {
      // the group is gone already
    }
    await exited;
  }
}

/** The DevTools protocol over chromium's pipe: JSON messages, each ended by a NUL byte; a command's reply by its id. */
class PipeSession {
  #next = 1;
  #buffer = "";
  readonly #replies = new Map<number, { resolve: (value: Record<string, unknown>) => void; reject: (error: Error) => void }>();
  readonly #waiters: { method: string; sessionId: string | undefined; resolve: () => void }[] = [];

  readonly #input: Writable;

  constructor(input: Writable, output: Readable) {
    this.#input = input;
    output.setEncoding("utf8");
    output.on("data", (chunk: string) => {
      this.#buffer += chunk;
      for (let end = this.#buffer.indexOf("\0"); end !== -1; end = this.#buffer.indexOf("\0")) {
        this.#receive(JSON.parse(this.#buffer.slice(0, end)) as Message);
        this.#buffer = this.#buffer.slice(end + 1);
      }
    });
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#replies.set(id, { resolve, reject });
      this.#input.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    });
  }

  event(method: string, sessionId?: string): Promise<void> {
    return new Promise((resolve) => this.#waiters.push({ method, sessionId, resolve }));
  }

  #receive(message: Message): void {
    if (message.id !== undefined) {
      const reply = this.#replies.get(message.id);
      this.#replies.delete(message.id);
      if (message.error) reply?.reject(new Error(`${message.error.message} (${message.id})`));
      else reply?.resolve(message.result ?? {});
      return;
    }
    const at = this.#waiters.findIndex((w) => w.method === message.method && w.sessionId === message.sessionId);
    if (at !== -1) this.#waiters.splice(at, 1)[0]!.resolve();
  }
}

interface Message {
  readonly id?: number;
  readonly method?: string;
  readonly sessionId?: string;
  readonly result?: Record<string, unknown>;
  readonly error?: { readonly message: string };
}
