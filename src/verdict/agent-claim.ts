import { clip } from "../lib/clip.js";

/**
 * What the agent's final message says about tests. handoff never trusts it; it records it so a reviewer sees the
 * claim beside handoff's own verification.
 */
// A type alias, not an interface, so a claim fits result.json's loose (index-signature) schema as it is.
export type TestClaim = {
  readonly tests: "pass" | "fail" | "not_run";
  /** The sentence that made the claim, as the agent wrote it (bounded). */
  readonly quote: string;
};

const NOT_RUN =
  /\b(could ?n[o']t|can ?n[o']t|did ?n[o']t|didn't|unable to|was not able to|wasn't able to|did not|haven't|have not|not) (run|execute)\b[^.!?\n]*\btests?\b|\btests? (were|was) not (run|executed)\b/i;
const FAIL =
  /\btests?\b[^.!?\n]*\b(fail|fails|failed|failing|still red|are red|broken|do ?n[o']t pass|does ?n[o']t pass|did ?n[o']t pass|not passing)\b|\b\d+ (failing|failed)\b/i;
const PASS =
  /\btests?\b[^.!?\n]*\b(pass|passes|passed|passing|succeed|succeeds|succeeded|green|are ok|ok)\b|\b(all|every) (checks?|specs?) (pass|passed)\b|\b\d+ passing\b/i;

export function readTestClaim(message: string | null): TestClaim | null {
  if (!message) return null;
  let claim: TestClaim | null = null;
  for (const raw of message.split(/(?<=[.!?])\s+|\n+/)) {
    const sentence = raw.trim();
    if (sentence === "") continue;
    const tests = NOT_RUN.test(sentence) ? "not_run" : FAIL.test(sentence) ? "fail" : PASS.test(sentence) ? "pass" : null;
    // The last claim wins: "the tests failed at first; now all tests pass" is a claim that they pass.
    if (tests) claim = { tests, quote: clip(sentence, 300) };
  }
  return claim;
}
