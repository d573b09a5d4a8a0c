/** Likely credentials in added lines. Reported by kind and line, never by value. */
export interface SecretKind {
  readonly name: string;
  readonly pattern: RegExp;
  /** What redaction (src/run-dir/redact.ts) removes when it is more than the match: a private key's whole block, not its first line. */
  readonly extent?: RegExp;
}

export const SECRET_KINDS: readonly SecretKind[] = [
  {
    name: "private key block",
    pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/,
    // Up to its END line (a PEM key is at most a few KiB: the search is bounded), or over the base64 lines that follow.
    extent:
      /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]{0,16384}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s]*)/,
  },
  { name: "AWS access key id", pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/ },
  { name: "GitHub token", pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b/ },
  { name: "Anthropic API key", pattern: /\bsk-ant-[A-Za-z0-9_-]{20,}/ },
  { name: "OpenAI API key", pattern: /\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}/ },
  { name: "Slack token", pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/ },
  { name: "Google API key", pattern: /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/ },
  { name: "Stripe live key", pattern: /\b(?:sk|rk)_live_[0-9A-Za-z]{20,}/ },
  { name: "npm token", pattern: /\bnpm_[A-Za-z0-9]{36}\b/ },
];

export interface SecretHit {
  readonly kind: string;
  readonly line: number;
}

/** Scans lines of text; `lineNumbers[i]` is the file line of `lines[i]`. */
export function findSecrets(lines: readonly string[], lineNumbers: readonly number[]): SecretHit[] {
  const hits: SecretHit[] = [];
  lines.forEach((line, i) => {
    for (const kind of SECRET_KINDS) {
      if (kind.pattern.test(line)) hits.push({ kind: kind.name, line: lineNumbers[i] ?? i + 1 });
    }
  });
  return hits;
}
