// The eight combo strategies (SPEC 4.6) with their labels and a one-line account of
// how each orders the targets (the gateway's own doc comments, in the UI's words).
import type { ComboStrategy } from "../../ipc/bindings";

export type StrategyInfo = { value: ComboStrategy; label: string; explanation: string };

const INFO: Record<ComboStrategy, Omit<StrategyInfo, "value">> = {
  priority: {
    label: "Priority (fallback chain)",
    explanation: "The first healthy target takes every request; the ones after it are fallbacks, in list order.",
  },
  "round-robin": {
    label: "Round robin",
    explanation: "Each request starts one target further along the list than the last, spreading requests evenly.",
  },
  weighted: {
    label: "Weighted",
    explanation:
      "The first target is drawn at random in proportion to its weight, the rest follow by weight; weight 0 is never drawn first.",
  },
  "fill-first": {
    label: "Fill first",
    explanation:
      "Stays on one target until it is ruled out (cooling, locked, failing), then moves to the next and stays there: one quota is used up before the next is touched.",
  },
  "least-used": {
    label: "Least used",
    explanation: "The target with the fewest requests in flight goes first (ties: the one sent the fewest).",
  },
  random: {
    label: "Random",
    explanation: "A new random order for every request.",
  },
  p2c: {
    label: "Power of two choices",
    explanation: "Of two targets drawn at random, the one with fewer requests in flight goes first.",
  },
  "reset-aware": {
    label: "Reset-aware",
    explanation:
      "The target whose quota window resets soonest (from its last rate-limit headers) goes first; targets with no known reset go last.",
  },
};

/** Every strategy, in the order the gateway lists them. */
export const STRATEGIES: StrategyInfo[] = (
  ["priority", "round-robin", "weighted", "fill-first", "least-used", "random", "p2c", "reset-aware"] as const
).map((value) => ({ value, ...INFO[value] }));

export function strategyInfo(strategy: ComboStrategy): StrategyInfo {
  return STRATEGIES.find((s) => s.value === strategy) ?? { value: strategy, label: strategy, explanation: "" };
}

/** What every strategy shares: it orders, the resilience machinery still skips. */
export const ORDER_ONLY =
  "Whatever the order, targets that are cooling down, locked out or behind an open breaker are skipped, and a target whose concurrency cap is reached gives way to the next free one.";
