import { assertNever } from "../lib/assert-never.js";
import type { AllowRule, RuleSource } from "./allow-rules.js";

/** A rule in the words of the records and the reports: what it allows, and where it came from. */
export function ruleWords(rule: AllowRule): string {
  switch (rule.kind) {
    case "any":
      return `any host (${sourceWords(rule.source)})`;
    case "host": {
      const what = rule.port === null ? rule.host : `${rule.host.includes(":") ? `[${rule.host}]` : rule.host}:${rule.port}`;
      if (rule.preset) return `${what} (${rule.preset} preset, ${sourceWords(rule.source)})`;
      return rule.source.kind === "option" ? sourceWords(rule.source) : `${what} (${sourceWords(rule.source)})`;
    }
    case "suffix":
      if (rule.preset) return `*.${rule.suffix} (${rule.preset} preset, ${sourceWords(rule.source)})`;
      return rule.source.kind === "option" ? sourceWords(rule.source) : `*.${rule.suffix} (${sourceWords(rule.source)})`;
    default:
      return assertNever(rule);
  }
}

function sourceWords(source: RuleSource): string {
  switch (source.kind) {
    case "option":
      return `--allow-net ${source.value.trim()}`;
    case "backend":
      return `${source.name}: ${source.why}`;
    case "setup":
      return `from "${source.command}"`;
    default:
      return assertNever(source);
  }
}
