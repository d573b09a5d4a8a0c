import { closeSync, constants, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A child's standard streams as things it can open again by name: stdout and stderr are real pipes (FIFOs), not
 * the UNIX socketpairs Node gives by default (on a socket, opening /dev/stdout or /dev/stderr, that is
 * /proc/self/fd/N, fails with ENXIO, so `echo x > /dev/stderr` failed inside agents and verify commands), and stdin
 * is a file holding the given input (`cat /dev/stdin` reads it to its end; a FIFO would block such an open once
 * handoff had closed its writer). All are made in a private directory removed as soon as they are open; handoff
 * reads its ends through libuv as pipes (idle timers, floods and the end of output work as with Node's pipes).
 */
export interface ChildStdio {
  /** What the child is given as fds 0, 1 and 2. */
  readonly childFds: readonly [number | "ignore", number, number];
  readonly stdout: Socket;
  readonly stderr: Socket;
  /** Closes the child's ends in handoff, once the child has its copies (or never started). */
  closeChildEnds(): void;
}

/** Makes FIFOs at the given paths (the process module runs `mkfifo`); false when it cannot. */
export type FifoMaker = (paths: readonly string[]) => boolean;

/**
 * Stdio for one child: `input` as its stdin (without it, /dev/null), FIFOs for its output. Null when FIFOs cannot
 * be made here: the caller falls back to Node's own pipes.
 */
export function openChildStdio(input: string | Buffer | undefined, makeFifos: FifoMaker): ChildStdio | null {
  let dir: string;
  try {
    dir = mkdtempSync(join(tmpdir(), "handoff-stdio-"));
  } catch {
    return null; // no writable temp dir: Node's pipes
  }
  const opened: number[] = [];
  const open = (path: string, flags: number) => {
    const fd = openSync(path, flags, 0o600);
    opened.push(fd);
    return fd;
  };
  try {
    if (!makeFifos([join(dir, "out"), join(dir, "err")])) return null;
    // A reader first (non-blocking, so the open returns at once), then the writer, which then does not block.
    // The child's ends stay blocking: a non-blocking stdout makes a writer fail with EAGAIN.
    const outRead = open(join(dir, "out"), constants.O_RDONLY | constants.O_NONBLOCK);
    const outWrite = open(join(dir, "out"), constants.O_WRONLY);
    const errRead = open(join(dir, "err"), constants.O_RDONLY | constants.O_NONBLOCK);
    const errWrite = open(join(dir, "err"), constants.O_WRONLY);
    let inRead: number | "ignore" = "ignore";
    if (input !== undefined) {
      writeFileSync(join(dir, "in"), input, { mode: 0o600, flag: "wx" });
      inRead = open(join(dir, "in"), constants.O_RDONLY | constants.O_NOFOLLOW);
    }
    const childEnds = [outWrite, errWrite, ...(typeof inRead === "number" ? [inRead] : [])];
    let closed = false;
    return {
      childFds: [inRead, outWrite, errWrite],
      stdout: new Socket({ fd: outRead, readable: true, writable: false }),
      stderr: new Socket({ fd: errRead, readable: true, writable: false }),
      closeChildEnds() {
        if (closed) return;
        closed = true;
        for (const fd of childEnds) closeSync(fd);
      },
    };
  } catch {
    for (const fd of opened) closeSync(fd);
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
