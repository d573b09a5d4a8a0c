import { createInterface } from "node:readline";

/** Asks the approval question on the terminal (stderr, so stdout stays the result); only `y` or `yes` approves. */
export async function askOnTerminal(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    // Ctrl-C at the prompt is a "no": readline swallows the signal on a TTY.
    const answer = await new Promise<string>((resolve) => {
      rl.once("SIGINT", () => resolve(""));
      rl.once("close", () => resolve(""));
      rl.question(`${question} [y/N] `, resolve);
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/** Whether the user can be asked here: stdin and stderr are a terminal, and stdin does not carry the task. */
export function canAskOnTerminal(taskFromStdin: boolean): boolean {
  return process.stdin.isTTY === true && process.stderr.isTTY === true && !taskFromStdin;
}
