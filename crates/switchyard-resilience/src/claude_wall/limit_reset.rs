//! The session limit reset of one Claude OAuth connection (SPEC 4.3, `autoLimitReset`;
//! program `juniper_tide`), as pure steps around the two upstream calls the caller
//! makes: `GET {base}`[`USAGE_PATH`] → [`ResetState::on_usage`] → (maybe
//! `GET {base}`[`BOOTSTRAP_PATH`] for the org UUID → [`ResetState::claim_step`]) →
//! `POST {base}`[`claim_path`] with [`CLAIM_BODY`] → [`ClaimOutcome::from_http`] →
//! [`ResetState::record`].
//!
//! Memo: `reset` / `not_limited` / `already_used` / `not_offered` keep the announced
//! `next_available_at` (default one week); any failure defers the next try by 15
//! minutes. After a granted reset, siblings hitting the wall within 60 s are told
//! "reset" without a call. One attempt per connection is in flight at a time (stale
//! after [`IN_FLIGHT_MS`]).
//!
//! Fail-closed: anything malformed (a missing `juniper_tide` block, an unknown
//! `result`) is a failure, never a reset; parsers never panic.

use serde_json::Value;
use switchyard_types::UnixMillis;
use switchyard_types::resilience::ClaudeResetResult;

use crate::classify::hints::parse_rfc3339;

/// The usage call (path and query, after the connection's base URL).
pub const USAGE_PATH: &str = "/api/oauth/usage?at_wall=1&skip_spend=1";
/// Where the org UUID is discovered when `organizationUUID` is not configured: the
/// Claude CLI bootstrap document's `organization_uuid` (see [`discover_org_uuid`]).
pub const BOOTSTRAP_PATH: &str = "/api/claude_cli/bootstrap";
/// The claim body (weekly session reset).
pub const CLAIM_BODY: &str = r#"{"program":"juniper_tide"}"#;
/// The program name.
pub const PROGRAM: &str = "juniper_tide";
/// Timeout of the usage call.
pub const USAGE_TIMEOUT_MS: u32 = 5_000;
/// Timeout of the claim call.
pub const CLAIM_TIMEOUT_MS: u32 = 25_000;
/// Next try after any failure.
pub const FAILURE_DEFER_MS: i64 = 900_000;
/// Next try after a spent or unoffered reset without an announced date.
pub const SPENT_DEFER_MS: i64 = 604_800_000;
/// Siblings within this window after a granted reset are told "reset".
pub const RECENT_RESET_MS: i64 = 60_000;
/// An attempt in flight longer than this (both timeouts) is considered abandoned.
pub const IN_FLIGHT_MS: i64 = 30_000;

/// `juniper_tide.arm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arm {
    /// No reset offered.
    Control,
    /// A reset may be offered.
    Reset,
}

/// The usage document's `juniper_tide` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JuniperTide {
    /// `eligible` (required).
    pub eligible: bool,
    /// `ineligible_reason` (empty is absent).
    pub ineligible_reason: Option<String>,
    /// `in_experiment`.
    pub in_experiment: bool,
    /// `arm` (unknown values are absent).
    pub arm: Option<Arm>,
    /// `available`.
    pub available: bool,
    /// `next_available_at`.
    pub next_available_at: Option<UnixMillis>,
    /// `weekly_resets_at`.
    pub weekly_resets_at: Option<UnixMillis>,
    /// `resets_per_week` (default 1).
    pub resets_per_week: u32,
}

fn instant(v: Option<&Value>) -> Option<UnixMillis> {
    v.and_then(Value::as_str).and_then(parse_rfc3339)
}

impl JuniperTide {
    /// The block of a usage document; `None` when absent or without a boolean
    /// `eligible`.
    pub fn from_usage(doc: &Value) -> Option<JuniperTide> {
        let b = doc.get(PROGRAM)?;
        let eligible = b.get("eligible")?.as_bool()?;
        let truthy = |k: &str| b.get(k).and_then(Value::as_bool) == Some(true);
        Some(JuniperTide {
            eligible,
            ineligible_reason: b
                .get("ineligible_reason")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            in_experiment: truthy("in_experiment"),
            arm: match b.get("arm").and_then(Value::as_str) {
                Some("reset") => Some(Arm::Reset),
                Some("control") => Some(Arm::Control),
                _ => None,
            },
            available: truthy("available"),
            next_available_at: instant(b.get("next_available_at")),
            weekly_resets_at: instant(b.get("weekly_resets_at")),
            resets_per_week: b
                .get("resets_per_week")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(1),
        })
    }

    /// The usage call's answer: a 2xx JSON body with the block, else `None` (a
    /// failure).
    pub fn from_http(status: u16, body: &[u8]) -> Option<JuniperTide> {
        if !(200..300).contains(&status) {
            return None;
        }
        serde_json::from_slice::<Value>(body).ok().as_ref().and_then(JuniperTide::from_usage)
    }

    /// A reset is on offer: eligible, arm `reset`, available.
    pub fn on_offer(&self) -> bool {
        self.eligible && self.arm == Some(Arm::Reset) && self.available
    }
}

/// The org UUID of a bootstrap (or OAuth token) document: `organization_uuid`, else
/// `organization.uuid`, else `account.organization_uuid`.
pub fn discover_org_uuid(doc: &Value) -> Option<String> {
    let candidates = [
        doc.get("organization_uuid"),
        doc.get("organization").and_then(|o| o.get("uuid")),
        doc.get("account").and_then(|a| a.get("organization_uuid")),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::trim)
        .find(|s| !s.is_empty())
        .map(str::to_owned)
}

/// `/api/organizations/{orgUUID}/reset_rate_limits`, the UUID percent-encoded.
pub fn claim_path(org_uuid: &str) -> String {
    let mut out = String::from("/api/organizations/");
    for b in org_uuid.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push_str("/reset_rate_limits");
    out
}

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimOutcome {
    /// The result.
    pub result: ClaudeResetResult,
    /// The announced next availability, if any.
    pub next_available_at: Option<UnixMillis>,
}

impl ClaimOutcome {
    /// An outcome without an announced date.
    pub fn of(result: ClaudeResetResult) -> ClaimOutcome {
        ClaimOutcome { result, next_available_at: None }
    }

    /// The claim call's answer: 429 → `rate_limited`, 401/403 → `auth_error`, other
    /// non-2xx → `error`; a 2xx body's `result` (unknown or malformed →
    /// `unavailable`) with `next_available_at` (else `cooldown_until`). A transport
    /// failure is `ClaimOutcome::of(ClaudeResetResult::Error)`.
    pub fn from_http(status: u16, body: &[u8]) -> ClaimOutcome {
        match status {
            429 => return ClaimOutcome::of(ClaudeResetResult::RateLimited),
            401 | 403 => return ClaimOutcome::of(ClaudeResetResult::AuthError),
            s if !(200..300).contains(&s) => return ClaimOutcome::of(ClaudeResetResult::Error),
            _ => {}
        }
        let doc = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
        let result = match doc.get("result").and_then(Value::as_str) {
            Some("reset") => ClaudeResetResult::Reset,
            Some("already_used") => ClaudeResetResult::AlreadyUsed,
            Some("not_limited") => ClaudeResetResult::NotLimited,
            Some("cooldown") => ClaudeResetResult::Cooldown,
            Some("ineligible") => ClaudeResetResult::Ineligible,
            _ => ClaudeResetResult::Unavailable,
        };
        let next = instant(doc.get("next_available_at")).or_else(|| instant(doc.get("cooldown_until")));
        ClaimOutcome { result, next_available_at: next }
    }

    /// Full speed is restored (`reset` or `not_limited`, or a sibling's recent reset).
    pub fn granted(&self) -> bool {
        matches!(
            self.result,
            ClaudeResetResult::Reset | ClaudeResetResult::NotLimited | ClaudeResetResult::RecentReset
        )
    }
}

/// The next step of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResetStep {
    /// `POST {base}{path}` with `body` (JSON), then [`ClaimOutcome::from_http`].
    Claim {
        /// The claim path.
        path: String,
        /// The JSON body.
        body: &'static str,
    },
    /// No org UUID configured: `GET {base}{path}`, [`discover_org_uuid`], then
    /// [`ResetState::claim_step`].
    DiscoverOrganization {
        /// [`BOOTSTRAP_PATH`].
        path: &'static str,
    },
    /// Finished without a claim: pass to [`ResetState::record`].
    Done(ClaimOutcome),
}

/// Whether an attempt may start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetAdmission {
    /// Go: make the usage call (the attempt is now in flight).
    Go,
    /// A sibling reset the limit less than a minute ago: retry at full speed.
    RecentReset,
    /// The memo says not before `next_try_at`: skip (fall back to the lane).
    MemoSkip,
    /// A sibling's attempt is in flight: wait for it.
    InFlight,
}

/// One connection's reset memo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ResetState {
    /// No attempt before this instant.
    pub next_try_at: Option<UnixMillis>,
    /// Siblings are told "reset" until this instant.
    pub recent_until: Option<UnixMillis>,
    /// An attempt is in flight until this instant (stale after).
    pub in_flight_until: Option<UnixMillis>,
    /// The last recorded outcome.
    pub last_result: Option<ClaudeResetResult>,
}

impl ResetState {
    /// Whether an attempt may start; `Go` marks it in flight.
    pub fn admit(&mut self, now: UnixMillis) -> ResetAdmission {
        if self.recent_until.is_some_and(|u| now < u) {
            return ResetAdmission::RecentReset;
        }
        if self.in_flight_until.is_some_and(|u| now < u) {
            return ResetAdmission::InFlight;
        }
        if self.next_try_at.is_some_and(|u| now < u) {
            return ResetAdmission::MemoSkip;
        }
        self.in_flight_until = Some(now.plus_millis(IN_FLIGHT_MS));
        ResetAdmission::Go
    }

    /// After the usage call (`None` = it failed): claim, discover the org, or stop.
    pub fn on_usage(&self, usage: Option<&JuniperTide>, org_uuid: Option<&str>) -> ResetStep {
        match usage {
            None => ResetStep::Done(ClaimOutcome::of(ClaudeResetResult::NoStatus)),
            Some(t) if !t.on_offer() => ResetStep::Done(ClaimOutcome {
                result: ClaudeResetResult::NotOffered,
                next_available_at: t.next_available_at,
            }),
            Some(_) => match org_uuid {
                Some(org) => self.claim_step(Some(org)),
                None => ResetStep::DiscoverOrganization { path: BOOTSTRAP_PATH },
            },
        }
    }

    /// The claim for an org UUID (`None` = none discovered: `no_organization`).
    pub fn claim_step(&self, org_uuid: Option<&str>) -> ResetStep {
        match org_uuid.map(str::trim).filter(|s| !s.is_empty()) {
            Some(org) => ResetStep::Claim { path: claim_path(org), body: CLAIM_BODY },
            None => ResetStep::Done(ClaimOutcome::of(ClaudeResetResult::NoOrganization)),
        }
    }

    /// Records an attempt's outcome (ends the in-flight mark) and sets the memo.
    pub fn record(&mut self, outcome: ClaimOutcome, now: UnixMillis) {
        use ClaudeResetResult as R;
        self.in_flight_until = None;
        let announced = outcome.next_available_at.filter(|at| *at > now);
        let default_ms = match outcome.result {
            R::RecentReset | R::MemoSkip => return,
            R::Reset | R::NotLimited | R::AlreadyUsed | R::NotOffered => SPENT_DEFER_MS,
            R::NoStatus
            | R::NoOrganization
            | R::Cooldown
            | R::Ineligible
            | R::Unavailable
            | R::RateLimited
            | R::AuthError
            | R::Error => FAILURE_DEFER_MS,
        };
        // Failures defer exactly 15 minutes; the rest keep the announced date.
        self.next_try_at = Some(match announced {
            Some(at) if default_ms != FAILURE_DEFER_MS => at,
            _ => now.plus_millis(default_ms),
        });
        if outcome.granted() {
            self.recent_until = Some(now.plus_millis(RECENT_RESET_MS));
        }
        self.last_result = Some(outcome.result);
    }
}

#[cfg(test)]
mod tests;
