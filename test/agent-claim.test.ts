import { describe, expect, test } from "vitest";
import { readTestClaim } from "../src/verdict/agent-claim.js";

describe("the agent's claim about tests", () => {
  test.each([
    ["Fixed add(). All tests pass.", "pass", "All tests pass."],
    ["I updated math.js and the test suite passes now", "pass", "I updated math.js and the test suite passes now"],
    ["Done. npm test: 12 passing", "pass", "npm test: 12 passing"],
    ["The tests still fail on Windows paths.", "fail", "The tests still fail on Windows paths."],
    ["Changed it, but 2 failing remain.", "fail", "Changed it, but 2 failing remain."],
    ["I could not run the tests because npm is missing.", "not_run", "I could not run the tests because npm is missing."],
    ["The tests failed at first. After the fix all tests pass.", "pass", "After the fix all tests pass."],
  ])("reads %j as a claim that tests %s", (message, tests, quote) => {
    expect(readTestClaim(message)).toEqual({ tests, quote });
  });

  test("finds no claim in a message that does not talk about tests", () => {
    expect(readTestClaim("I renamed the variable.")).toBeNull();
    expect(readTestClaim(null)).toBeNull();
  });

  test("bounds a very long claim sentence", () => {
    const claim = readTestClaim(`All tests pass ${"and more ".repeat(100)}`);
    expect(claim?.tests).toBe("pass");
    // 300 characters at most, whole words, and the clip marker (src/lib/clip.ts).
    expect(claim!.quote).toMatch(/^All tests pass (?:and |more )+… \(\d+ more characters\)$/);
    expect(claim!.quote.length).toBeLessThanOrEqual(300 + "… (1000 more characters)".length);
  });
});
