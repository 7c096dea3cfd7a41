// The operator error rules (`providerErrorRules`) as a form: one draft row per rule
// holding the raw text the user typed, and the list a draft turns into. Fields are
// addressed by JSON pointer with the concrete index (`/providerErrorRules/2/match`),
// which is also the path of the gateway's issues.
import type { ErrorReason, ProviderErrorRule, RuleScope } from "../../ipc/bindings";
import { parseWholeNumber } from "../../shared/settingsForm";

export const RULES_PATH = "/providerErrorRules";

export const RULE_FIELDS = ["provider", "status", "match", "scope", "reason", "cooldownMs"] as const;
export type RuleField = (typeof RULE_FIELDS)[number];

/** `/providerErrorRules/{index}/{field}`. */
export function rulePath(index: number, field: RuleField): string {
  return `${RULES_PATH}/${index}/${field}`;
}

/** Every field path of a list of `count` rules, the list itself first. */
export function rulePaths(count: number): string[] {
  const paths = [RULES_PATH];
  for (let i = 0; i < count; i++) for (const f of RULE_FIELDS) paths.push(rulePath(i, f));
  return paths;
}

/** The scopes when the ranges table is not loaded (its `allowed` list wins). */
export const SCOPES: RuleScope[] = ["model", "provider", "connection"];

/** The scope of a new rule: the connection that answered cools. */
export const NEW_RULE_SCOPE: RuleScope = "connection";

export type RuleDraft = {
  /** React key; stays with the rule when rows above it are removed. */
  key: string;
  provider: string;
  /** Raw text; empty matches any failure status. */
  status: string;
  match: string;
  scope: RuleScope;
  /** Empty is the default reason (quota_exhausted). */
  reason: ErrorReason | "";
  /** Raw text; empty uses the layer's own backoff. */
  cooldownMs: string;
};

export function draftFromRule(rule: ProviderErrorRule, key: string): RuleDraft {
  return {
    key,
    provider: rule.provider,
    status: rule.status == null ? "" : String(rule.status),
    match: rule.match,
    scope: rule.scope,
    reason: rule.reason ?? "",
    cooldownMs: rule.cooldownMs == null ? "" : String(rule.cooldownMs),
  };
}

export function emptyRule(key: string): RuleDraft {
  return { key, provider: "", status: "", match: "", scope: NEW_RULE_SCOPE, reason: "", cooldownMs: "" };
}

/** Whether two drafts hold the same rules (keys ignored). */
export function sameRules(a: RuleDraft[], b: RuleDraft[]): boolean {
  return a.length === b.length && a.every((r, i) => RULE_FIELDS.every((f) => r[f] === b[i][f]));
}

export type BuiltRules = {
  /** The whole list, in order, as `providerErrorRules` takes it. */
  rules: ProviderErrorRule[];
  /** Client-side problems that block sending (path → message). */
  errors: Record<string, string>;
};

/**
 * Turns a draft into the rule list. Texts are trimmed (the gateway trims them when it
 * counts and matches); numbers are sent as typed, even when out of range, since the
 * gateway is the validator of record; empty optional values are sent as null.
 */
export function buildRules(drafts: RuleDraft[]): BuiltRules {
  const rules: ProviderErrorRule[] = [];
  const errors: Record<string, string> = {};
  drafts.forEach((d, i) => {
    const status = parseWholeNumber(d.status, true);
    const cooldown = parseWholeNumber(d.cooldownMs, true);
    if ("error" in status) errors[rulePath(i, "status")] = status.error;
    if ("error" in cooldown) errors[rulePath(i, "cooldownMs")] = cooldown.error;
    rules.push({
      provider: d.provider.trim(),
      status: "value" in status ? status.value : null,
      match: d.match.trim(),
      scope: d.scope,
      reason: d.reason === "" ? null : d.reason,
      cooldownMs: "value" in cooldown ? cooldown.value : null,
    });
  });
  return { rules, errors };
}
