//! A connection's one derived status ([`RoutabilityView`]), computed here and only
//! here from every source that can keep a request off it: its switch, the routing
//! pause, a terminal state, its provider's breaker (and window gate), its cooldown,
//! its model lockouts, its last Test, and the Claude usage wall. The connection
//! list, the health API, the tray line and every page show this value.
//!
//! [`derive`] is pure (inputs in, view out); [`Inputs::gather`] takes one snapshot
//! of the sources, so a list of connections is derived from one consistent view.

pub mod tests_registry;

use std::collections::HashMap;

use switchyard_types::UnixMillis;
use switchyard_types::resilience::{
    BreakerStateName, ClaudeWallView, ConnectionCooldownView, ConnectionStatus, ErrorReason,
    ProviderBreakerView,
};
use switchyard_types::routability::{LastTestView, RoutabilityState, RoutabilityView};

pub use tests_registry::ConnectionTests;

/// What a connection is, for its status.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionFacts<'a> {
    /// Connection id.
    pub id: &'a str,
    /// Provider id.
    pub provider: &'a str,
    /// Its switch.
    pub enabled: bool,
}

/// One snapshot of every source.
#[derive(Debug)]
pub struct Inputs {
    /// Routing is paused.
    pub paused: bool,
    /// Breakers by provider.
    pub breakers: HashMap<String, ProviderBreakerView>,
    /// Cooldown views (with their lockouts) by connection.
    pub cooldowns: HashMap<String, ConnectionCooldownView>,
    /// Claude usage-wall views by connection.
    pub walls: HashMap<String, ClaudeWallView>,
    /// Latest Test results by connection (failed ones not since superseded).
    pub tests: HashMap<String, LastTestView>,
    /// The instant of the snapshot.
    pub now: UnixMillis,
}

impl Inputs {
    /// Nothing keeps any connection out, at `now`.
    pub fn empty(now: UnixMillis) -> Inputs {
        Inputs {
            paused: false,
            breakers: HashMap::new(),
            cooldowns: HashMap::new(),
            walls: HashMap::new(),
            tests: HashMap::new(),
            now,
        }
    }

    /// Takes the snapshot.
    pub fn gather(
        resilience: &crate::resilience::Resilience,
        walls: &switchyard_resilience::claude_wall::ClaudeWall,
        paused: bool,
        now: UnixMillis,
    ) -> Inputs {
        let engine = &resilience.engine;
        Inputs {
            paused,
            breakers: engine.breakers().into_iter().map(|b| (b.provider.clone(), b)).collect(),
            cooldowns: engine.cooldowns(None).into_iter().map(|c| (c.connection.clone(), c)).collect(),
            walls: walls.views(now).into_iter().collect(),
            tests: resilience.tests.failing(),
            now,
        }
    }
}

/// An upstream refusal's reason in words.
pub fn reason_words(reason: ErrorReason) -> &'static str {
    match reason {
        ErrorReason::RateLimit => "rate limited by the upstream",
        ErrorReason::QuotaExhausted => "its usage quota is used up",
        ErrorReason::ConcurrencyLimited => "too many requests at once for the account",
        ErrorReason::AuthError => "the upstream rejected its credentials",
        ErrorReason::RequestRejected => "the upstream refused the account's requests",
        ErrorReason::Forbidden => "the upstream forbids this account or model",
        ErrorReason::CreditsExhausted => "its credits or billing are exhausted",
        ErrorReason::Banned => "the upstream deactivated the account",
        ErrorReason::NotFound => "the model or endpoint does not exist there",
        ErrorReason::ServerError => "the upstream failed (5xx)",
        ErrorReason::Timeout => "the upstream timed out",
        ErrorReason::Unreachable => "the upstream could not be reached",
        ErrorReason::ModelCapacity => "the model is overloaded",
        ErrorReason::StreamStall => "a stream stalled without output",
        ErrorReason::BadRequest => "a request was refused as invalid",
        ErrorReason::Local => "a gateway-side failure",
        ErrorReason::Unknown => "an unclassified failure",
    }
}

fn view(
    state: RoutabilityState,
    label: &str,
    detail: String,
    until: Option<UnixMillis>,
    locked: &[String],
) -> RoutabilityView {
    let routable = matches!(
        state,
        RoutabilityState::Routable
            | RoutabilityState::ModelsLocked
            | RoutabilityState::UsageWall
            | RoutabilityState::BreakerHalfOpen
            | RoutabilityState::TestFailed
    );
    RoutabilityView {
        state,
        routable,
        label: label.to_owned(),
        detail,
        until,
        locked_models: locked.to_vec(),
    }
}

/// The connection's status: the most severe source decides.
pub fn derive(conn: ConnectionFacts<'_>, inputs: &Inputs) -> RoutabilityView {
    let now = inputs.now;
    let cooldown = inputs.cooldowns.get(conn.id);
    let locked: Vec<String> = cooldown
        .map(|c| c.lockouts.iter().filter(|l| l.expires_at > now).map(|l| l.model.clone()).collect())
        .unwrap_or_default();
    let why = |c: &ConnectionCooldownView| {
        let reason = c.last_error_kind.map_or("an upstream failure", reason_words);
        match c.error_code {
            Some(code) => format!("{reason} (HTTP {code})"),
            None => reason.to_owned(),
        }
    };
    if !conn.enabled {
        return view(
            RoutabilityState::Disabled,
            "Disabled",
            "Switched off: never routed to.".into(),
            None,
            &locked,
        );
    }
    if inputs.paused {
        return view(
            RoutabilityState::Paused,
            "Paused",
            "Routing is paused for the whole gateway (tray menu or Overview: Resume).".into(),
            None,
            &locked,
        );
    }
    if let Some(c) = cooldown {
        let terminal = match c.status {
            ConnectionStatus::Banned => Some("Banned"),
            ConnectionStatus::Expired => Some("Credentials expired"),
            ConnectionStatus::CreditsExhausted => Some("Credits exhausted"),
            ConnectionStatus::Active | ConnectionStatus::Unavailable => None,
        };
        if let Some(label) = terminal {
            let detail = format!(
                "Out of rotation until you act: {}. Give it new credentials on the Connections page (that \
                 brings it back), or sort out the account's billing first.",
                why(c)
            );
            return view(RoutabilityState::Terminal, label, detail, None, &locked);
        }
    }
    if let Some(b) = inputs.breakers.get(conn.provider) {
        if b.state == BreakerStateName::Open {
            let detail = format!(
                "Provider '{}' failed {} times in a row{}; no connection of it is tried until a probe is allowed.",
                conn.provider,
                b.failure_count,
                b.last_failure_kind.map(|k| format!(" ({})", reason_words(k))).unwrap_or_default()
            );
            return view(RoutabilityState::BreakerOpen, "Breaker open", detail, b.open_until, &locked);
        }
        if let Some(until) = b.gate_cooling_until.filter(|u| *u > now) {
            let detail = format!(
                "Provider '{}' is rate limited as a whole (window gate); it is skipped until then.",
                conn.provider
            );
            return view(RoutabilityState::BreakerOpen, "Provider cooling", detail, Some(until), &locked);
        }
    }
    if let Some(c) = cooldown
        && let Some(until) = c.rate_limited_until.filter(|u| *u > now)
    {
        let detail = format!("Cooling down: {}. Back in rotation at the time shown.", why(c));
        return view(RoutabilityState::Cooling, "Cooling", detail, Some(until), &locked);
    }
    if let Some(test) = inputs.tests.get(conn.id).filter(|t| !t.ok) {
        let detail = format!(
            "Its last Test failed: {}. Requests still try it; fix the connection and Test again.",
            test.message
        );
        return view(RoutabilityState::TestFailed, "Test failed", detail, None, &locked);
    }
    if inputs.breakers.get(conn.provider).is_some_and(|b| b.state == BreakerStateName::HalfOpen) {
        let detail = format!(
            "Provider '{}' is recovering: one probe request at a time decides whether it is back.",
            conn.provider
        );
        return view(RoutabilityState::BreakerHalfOpen, "Probing", detail, None, &locked);
    }
    if !locked.is_empty() {
        let until = cooldown.and_then(|c| c.lockouts.iter().map(|l| l.expires_at).max());
        let detail = format!("Routes, except these models, locked out for a while: {}.", locked.join(", "));
        return view(RoutabilityState::ModelsLocked, "Models locked", detail, until, &locked);
    }
    if let Some(until) = inputs.walls.get(conn.id).and_then(|w| w.lane_active_until).filter(|u| *u > now) {
        let detail = "At the Claude usage wall: requests go through the slower low-priority lane until the \
                      window resets."
            .to_owned();
        return view(RoutabilityState::UsageWall, "Low-priority lane", detail, Some(until), &locked);
    }
    view(RoutabilityState::Routable, "Active", "In rotation.".into(), None, &locked)
}

#[cfg(test)]
mod tests;
