//! From a verdict to what each layer does (the "record" step's decision), pure and
//! table-tested. Rules:
//! - the breaker (and window gate) count the failure when the verdict says so;
//! - the connection gets the effect of its reason (backoff, 1 s concurrency cool,
//!   terminal, refusal streak, auth retries, stall per setting, or only the error);
//!   server-side failures (5xx, 529, connect errors, timeouts, broken streams) back
//!   off too (SPEC 4.2), so a dead connection leaves rotation even while a healthy
//!   sibling keeps the provider breaker closed;
//! - an answer the gateway relays (a request error) changes nothing;
//! - a model lockout applies when lockouts are on and the status is listed (or an
//!   operator rule declared `model` scope); for account-level reasons it then
//!   replaces the connection cooldown, since one failing model is not one failing
//!   connection. Concurrency limits, terminal signals, refusals and auth failures
//!   never become lockouts.

use switchyard_types::resilience::{ErrorReason, LockScope, RuleScope};

use crate::classify::{Action, Verdict};
use crate::cooldown::{CooldownEffect, TerminalKind};
use crate::lockout::LockoutPolicy;

/// A lockout to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockPlan {
    /// What it covers.
    pub scope: LockScope,
    /// A rule's fixed length.
    pub fixed_ms: Option<u32>,
}

/// What the layers do with one failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Count for the breaker with this kind.
    pub breaker: Option<ErrorReason>,
    /// The connection's effect; `None` leaves the connection untouched.
    pub cooldown: Option<CooldownEffect>,
    /// A lockout to record.
    pub lockout: Option<LockPlan>,
}

/// The connection effect of a reason.
pub fn effect_for(reason: ErrorReason, stall_cooldown: bool) -> Option<CooldownEffect> {
    Some(match reason {
        ErrorReason::RateLimit
        | ErrorReason::QuotaExhausted
        | ErrorReason::Forbidden
        | ErrorReason::ServerError
        | ErrorReason::Timeout
        | ErrorReason::Unreachable
        | ErrorReason::ModelCapacity
        | ErrorReason::Unknown => CooldownEffect::Backoff,
        ErrorReason::ConcurrencyLimited => CooldownEffect::Concurrency,
        ErrorReason::AuthError => CooldownEffect::AuthFailure,
        ErrorReason::RequestRejected => CooldownEffect::RequestRejected,
        ErrorReason::CreditsExhausted => CooldownEffect::Terminal(TerminalKind::CreditsExhausted),
        ErrorReason::Banned => CooldownEffect::Terminal(TerminalKind::Banned),
        ErrorReason::StreamStall => CooldownEffect::for_stall(stall_cooldown),
        ErrorReason::NotFound | ErrorReason::BadRequest => CooldownEffect::RecordOnly,
        ErrorReason::Local => return None,
    })
}

fn lockable(reason: ErrorReason) -> bool {
    matches!(
        reason,
        ErrorReason::RateLimit
            | ErrorReason::QuotaExhausted
            | ErrorReason::Forbidden
            | ErrorReason::NotFound
            | ErrorReason::ServerError
            | ErrorReason::Timeout
            | ErrorReason::ModelCapacity
            | ErrorReason::Unknown
    )
}

/// Decides what each layer does with a verdict.
pub fn plan(v: &Verdict, lockout: &LockoutPolicy, stall_cooldown: bool) -> Plan {
    if v.action == Action::Relay && !v.explicit_scope {
        return Plan { breaker: None, cooldown: None, lockout: None };
    }
    let breaker = v.counts_for_breaker.then_some(v.reason);
    let effect = effect_for(v.reason, stall_cooldown);
    if v.explicit_scope {
        return match v.scope {
            RuleScope::Model => Plan {
                breaker,
                cooldown: Some(CooldownEffect::RecordOnly),
                lockout: Some(LockPlan { scope: v.lock_scope, fixed_ms: v.rule_cooldown_ms }),
            },
            RuleScope::Connection => Plan {
                breaker,
                cooldown: v.rule_cooldown_ms.map(|ms| CooldownEffect::Fixed { ms }).or(effect),
                lockout: None,
            },
            RuleScope::Provider => {
                Plan { breaker, cooldown: Some(CooldownEffect::RecordOnly), lockout: None }
            }
        };
    }
    if lockout.locks_status(v.status) && lockable(v.reason) {
        let cooldown = match effect {
            Some(CooldownEffect::Backoff) => Some(CooldownEffect::RecordOnly),
            other => other,
        };
        return Plan { breaker, cooldown, lockout: Some(LockPlan { scope: v.lock_scope, fixed_ms: None }) };
    }
    Plan { breaker, cooldown: effect, lockout: None }
}

#[cfg(test)]
mod tests {
    use switchyard_types::UnixMillis;
    use switchyard_types::settings::{ModelLockoutSettings, ProviderErrorRule};

    use super::*;
    use crate::classify::rules::OperatorRules;
    use crate::classify::{ClassifyContext, classify, restate};
    use crate::outcome::{AttemptOutcome, TransportFailure};

    fn lockouts(enabled: bool) -> LockoutPolicy {
        LockoutPolicy::from_settings(
            &ModelLockoutSettings { enabled, ..ModelLockoutSettings::default() },
            60_000,
        )
    }

    fn verdict_for(status: u16, body: &str, ops: &OperatorRules) -> Verdict {
        let headers: &[(&str, &str)] = &[];
        let cx = ClassifyContext {
            provider: "p",
            restatements: restate::BUILTIN_RULES,
            operator: ops,
            now: UnixMillis(0),
            utc_offset_ms: 0,
        };
        classify(&AttemptOutcome::Http { status, headers: &headers, body }, &cx)
    }

    fn plan_for(status: u16, body: &str, lockout_on: bool) -> Plan {
        plan(&verdict_for(status, body, &OperatorRules::default()), &lockouts(lockout_on), false)
    }

    #[test]
    fn default_plans_by_status() {
        use CooldownEffect::*;
        let cases: [(u16, &str, Plan); 9] = [
            (429, "", Plan { breaker: None, cooldown: Some(Backoff), lockout: None }),
            (
                429,
                "too many concurrent requests",
                Plan { breaker: None, cooldown: Some(Concurrency), lockout: None },
            ),
            (
                503,
                "",
                Plan { breaker: Some(ErrorReason::ServerError), cooldown: Some(Backoff), lockout: None },
            ),
            (401, "", Plan { breaker: None, cooldown: Some(AuthFailure), lockout: None }),
            (
                403,
                "Request not allowed",
                Plan { breaker: None, cooldown: Some(RequestRejected), lockout: None },
            ),
            (
                402,
                "credit balance is too low",
                Plan {
                    breaker: None,
                    cooldown: Some(Terminal(TerminalKind::CreditsExhausted)),
                    lockout: None,
                },
            ),
            (404, "", Plan { breaker: None, cooldown: Some(RecordOnly), lockout: None }),
            (529, "", Plan { breaker: None, cooldown: Some(Backoff), lockout: None }),
            (400, "bad field", Plan { breaker: None, cooldown: None, lockout: None }),
        ];
        for (status, body, expected) in cases {
            assert_eq!(plan_for(status, body, false), expected, "{status} {body}");
        }
    }

    #[test]
    fn with_lockouts_on_a_listed_status_locks_the_model_instead_of_the_connection() {
        let p = plan_for(429, "", true);
        assert_eq!(p.lockout, Some(LockPlan { scope: LockScope::QuotaFamily, fixed_ms: None }));
        assert_eq!(p.cooldown, Some(CooldownEffect::RecordOnly));
        let p = plan_for(404, "", true);
        assert_eq!(p.lockout.map(|l| l.scope), Some(LockScope::Model));
        let p = plan_for(503, "", true);
        assert_eq!(
            (p.breaker, p.lockout.map(|l| l.scope)),
            (Some(ErrorReason::ServerError), Some(LockScope::Exact))
        );
        assert_eq!(plan_for(500, "", true).lockout, None, "500 is not in the default list");
        assert_eq!(plan_for(429, "并发数过高", true).lockout, None, "a busy account is not a model problem");
        assert_eq!(plan_for(401, "", true).lockout, None);
    }

    #[test]
    fn operator_scopes_are_honoured() {
        let rule = |scope| {
            OperatorRules::from_settings(&[ProviderErrorRule {
                provider: "p".to_owned(),
                status: None,
                text: "boom".to_owned(),
                scope,
                reason: None,
                cooldown_ms: Some(9_000),
            }])
        };
        let off = lockouts(false);
        let p = plan(&verdict_for(400, "boom", &rule(RuleScope::Model)), &off, false);
        assert_eq!(p.lockout, Some(LockPlan { scope: LockScope::Model, fixed_ms: Some(9_000) }));
        let p = plan(&verdict_for(400, "boom", &rule(RuleScope::Connection)), &off, false);
        assert_eq!(p.cooldown, Some(CooldownEffect::Fixed { ms: 9_000 }));
        let p = plan(&verdict_for(400, "boom", &rule(RuleScope::Provider)), &off, false);
        assert_eq!(p.breaker, Some(ErrorReason::QuotaExhausted));
    }

    #[test]
    fn stalls_and_local_failures() {
        let ops = OperatorRules::default();
        let cx = ClassifyContext {
            provider: "p",
            restatements: &[],
            operator: &ops,
            now: UnixMillis(0),
            utc_offset_ms: 0,
        };
        let stall = classify(&AttemptOutcome::StreamStall, &cx);
        assert_eq!(plan(&stall, &lockouts(true), false).cooldown, Some(CooldownEffect::RecordOnly));
        assert_eq!(plan(&stall, &lockouts(true), true).cooldown, Some(CooldownEffect::Backoff));
        let local = classify(&AttemptOutcome::Local, &cx);
        assert_eq!(
            plan(&local, &lockouts(true), false),
            Plan { breaker: None, cooldown: None, lockout: None }
        );
        let connect = classify(&AttemptOutcome::Transport(TransportFailure::Connect), &cx);
        let p = plan(&connect, &lockouts(true), false);
        assert_eq!((p.breaker, p.cooldown), (Some(ErrorReason::Unreachable), Some(CooldownEffect::Backoff)));
        let timeout = classify(&AttemptOutcome::Transport(TransportFailure::Timeout), &cx);
        assert_eq!(plan(&timeout, &lockouts(false), false).cooldown, Some(CooldownEffect::Backoff));
    }
}
