import { describe, expect, test } from "vitest";
import { UsageError } from "../src/lib/errors.js";
import { DELEGATE_SETTINGS_SHAPE, delegateOptions } from "../src/settings/delegate-fields.js";
import { SETTINGS } from "../src/settings/settings.js";

const none = { commandLine: {}, config: {} };

function refusal(work: () => unknown): UsageError {
  try {
    work();
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
  throw new Error("not refused");
}

describe("what a handoff mcp tool call may set: never wider than the user's settings", () => {
  test("the tool's settings are exactly the rows with a delegate rule, under their .handoff.json key or field", () => {
    const withRule = SETTINGS.filter((row) => "delegate" in row).map((row) => ("file" in row ? row.file.key : row.option));
    expect(Object.keys(DELEGATE_SETTINGS_SHAPE).sort()).toEqual([...withRule].sort());
    for (const userOnly of [
      "sandbox",
      "allowNet",
      "testEdits",
      "env",
      "noVerify",
      "agentCmd",
      "allowConfig",
      "expose",
      "verifyNetwork",
      "holdoutPatches",
    ])
      expect(Object.keys(DELEGATE_SETTINGS_SHAPE)).not.toContain(userOnly);
  });

  test("verify, setup, deny and protect add to the command line's, else to .handoff.json's, once each", () => {
    expect(delegateOptions({ verify: ["npm test -- date"] }, { commandLine: {}, config: { verify: ["npm test"] } })).toEqual({
      verify: ["npm test", "npm test -- date"],
    });
    expect(delegateOptions({ verify: ["b", "a"] }, { commandLine: { verify: ["a"] }, config: { verify: ["file"] } })).toEqual({
      verify: ["a", "b"],
    });
    expect(delegateOptions({ deny: ["*.lock"], protect: ["jest.config.js"] }, none)).toEqual({
      deny: ["*.lock"],
      protect: ["jest.config.js"],
    });
  });

  test("a switch that adds a check is only turned on: false leaves the user's as it is", () => {
    expect(delegateOptions({ baseline: true }, none)).toEqual({ baseline: true });
    expect(delegateOptions({ baseline: false }, { commandLine: { baseline: true }, config: {} })).toEqual({});
  });

  test("backend, model, attempts and timeout are the call's unless the command line fixed them; .handoff.json's are only defaults", () => {
    expect(
      delegateOptions(
        { backend: "claude", model: "m", attempts: 3, timeout: 60 },
        { commandLine: {}, config: { backend: "codex", model: "x" } },
      ),
    ).toEqual({
      backend: "claude",
      model: "m",
      attempts: 3,
      timeoutMs: 60_000,
    });
    expect(delegateOptions({ backend: "codex" }, { commandLine: { backend: ["codex"] }, config: {} })).toEqual({ backend: "codex" });
    const model = refusal(() => delegateOptions({ model: "m2" }, { commandLine: { model: "m1" }, config: {} }));
    expect(model.code).toBe("fixed_by_user");
    expect(model.message).toBe("'model' is fixed by the handoff mcp command line (--model); a call cannot change it");
    expect(refusal(() => delegateOptions({ backend: "claude" }, { commandLine: { backend: ["codex"] }, config: {} })).code).toBe(
      "fixed_by_user",
    );
  });

  test("allow is the call's only where the user has none: a second list would widen the first", () => {
    expect(delegateOptions({ allow: ["src/date.ts"] }, none)).toEqual({ allow: ["src/date.ts"] });
    expect(refusal(() => delegateOptions({ allow: ["**"] }, { commandLine: {}, config: { allow: ["src/**"] } })).message).toMatch(
      /'allow' is already set by the user's \.handoff\.json/,
    );
    expect(refusal(() => delegateOptions({ allow: ["**"] }, { commandLine: { allow: ["src/**"] }, config: {} })).message).toMatch(
      /command line \(--allow\)/,
    );
  });
});
