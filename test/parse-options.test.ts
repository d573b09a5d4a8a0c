import { describe, expect, test } from "vitest";
import { parseOptions } from "../src/cli/parse-options.js";
import { UsageError } from "../src/lib/errors.js";

const OPTIONS = { verify: { type: "string", multiple: true }, yes: { type: "boolean" } } as const;

function usageMessage(args: string[]): string {
  try {
    parseOptions("run", args, OPTIONS);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error("parsed without an error");
}

describe("parseOptions", () => {
  test("an unknown option holding a newline or an escape sequence is shown escaped, on one line", () => {
    const message = usageMessage([`--ver\nify\u001b[2J`]);
    expect(message).toBe("unknown option '--ver\\x0aify\\x1b[2J' for 'handoff run' (see handoff run --help)");
  });

  test("an unknown option of a megabyte is cut in the message", () => {
    const message = usageMessage([`--${"x".repeat(1_000_000)}`]);
    expect(message.length).toBeLessThan(200);
    expect(message).toContain("…' for 'handoff run'");
  });

  test("a close typo names the real option", () => {
    expect(usageMessage(["--verfy", "npm test"])).toBe("unknown option '--verfy' for 'handoff run' (did you mean --verify?)");
  });
});
