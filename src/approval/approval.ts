import { ApprovalRequiredError } from "../lib/errors.js";

/**
 * Gate 1: the user lets an agent edit a disposable clone of their repository. What is asked, and the answer as
 * data. Nothing here reads a terminal (the CLI passes `askOnTerminal`, a library caller its own `approve`).
 */
export type Approval =
  | { readonly kind: "approved" }
  | { readonly kind: "declined" }
  /** `--yes`: approved without asking. */
  | { readonly kind: "not_asked" };

/** How the run is approved: `--yes`, or a question asked by `ask` (true approves). */
export interface ApprovalRequest {
  readonly yes?: boolean;
  readonly ask?: (question: string) => Promise<boolean>;
}

/** What is shown to the user before the agent starts. */
export interface ApprovalSubject {
  readonly backendName: string;
  readonly repo: string;
  readonly baseCommit: string;
}

/** Refuses a run that nobody can approve, before anything is created: no `--yes` and no one to ask. */
export function requireApprover(request: ApprovalRequest): void {
  if (!request.yes && !request.ask) throw new ApprovalRequiredError();
}

export function approvalQuestion(subject: ApprovalSubject): string {
  return `Let ${subject.backendName} edit a disposable clone of ${subject.repo} at ${subject.baseCommit.slice(0, 12)}? (the repository itself stays read-only)`;
}

export async function askApproval(request: ApprovalRequest, subject: ApprovalSubject): Promise<Approval> {
  if (request.yes) return { kind: "not_asked" };
  requireApprover(request);
  return (await request.ask!(approvalQuestion(subject))) ? { kind: "approved" } : { kind: "declined" };
}

/** The agent may start: approved by the user or by `--yes`. */
export function isApproved(approval: Approval): boolean {
  return approval.kind !== "declined";
}
