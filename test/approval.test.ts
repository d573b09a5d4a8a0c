import { describe, expect, test } from "vitest";
import { approvalQuestion, askApproval, isApproved, requireApprover } from "../src/approval/approval.js";
import { ApprovalRequiredError } from "../src/lib/errors.js";

const SUBJECT = { backendName: "codex", repo: "/src/project", baseCommit: "0123456789abcdef0123456789abcdef01234567" };

describe("gate 1: approval", () => {
  test("--yes approves without asking", async () => {
    const asked: string[] = [];
    const approval = await askApproval(
      {
        yes: true,
        ask: async (question) => {
          asked.push(question);
          return false;
        },
      },
      SUBJECT,
    );
    expect(approval).toEqual({ kind: "not_asked" });
    expect(isApproved(approval)).toBe(true);
    expect(asked).toEqual([]);
  });

  test("the question names the backend, the repository and the base commit, and says the repository stays read-only", async () => {
    const asked: string[] = [];
    const approval = await askApproval(
      {
        ask: async (question) => {
          asked.push(question);
          return true;
        },
      },
      SUBJECT,
    );
    expect(approval).toEqual({ kind: "approved" });
    expect(asked).toEqual([approvalQuestion(SUBJECT)]);
    expect(asked[0]).toBe("Let codex edit a disposable clone of /src/project at 0123456789ab? (the repository itself stays read-only)");
  });

  test("a no is a decline, and the agent may not start", async () => {
    const approval = await askApproval({ ask: async () => false }, SUBJECT);
    expect(approval).toEqual({ kind: "declined" });
    expect(isApproved(approval)).toBe(false);
  });

  test("without --yes and with no one to ask, the run is refused before anything is created", () => {
    expect(() => requireApprover({})).toThrow(ApprovalRequiredError);
    expect(() => requireApprover({ yes: true })).not.toThrow();
    expect(() => requireApprover({ ask: async () => true })).not.toThrow();
  });
});
