//! Gateway status documents for the Overview page and the tray: the base URL,
//! routing pause, request counts, and the change topics pushed to the UI.

use serde::{Deserialize, Serialize};

use crate::api::RequestLogEntryView;
use crate::time::UnixMillis;

/// `GET /api/gateway`: what an agent needs to reach this gateway, and whether it
/// routes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStatusView {
    /// The base URL agents point at (`http://127.0.0.1:7821`).
    pub base_url: String,
    /// The bound address.
    pub listen: String,
    /// Gateway version.
    pub version: String,
    /// Whether routing is paused (inference requests answered 503 `routing_paused`).
    pub paused: bool,
    /// Whether inference requests need a client API key (loopback callers may be
    /// exempted by the gateway settings).
    pub client_key_required: bool,
}

/// `POST /api/gateway/pause`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoutingPauseRequest {
    /// `true` pauses routing, `false` resumes it.
    pub paused: bool,
}

/// `GET /api/monitoring/summary`: request counts and the latest errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringSummaryView {
    /// Client requests in the last hour and their outcomes, as the agents saw them.
    pub clients_last_hour: crate::requests::RequestCountsView,
    /// Client requests in the last 24 hours and their outcomes.
    pub clients_last_day: crate::requests::RequestCountsView,
    /// Upstream attempts started in the last hour (one request may take several).
    pub attempts_last_hour: u32,
    /// Of those, attempts that failed (absorbed by failover or not).
    pub failed_attempts_last_hour: u32,
    /// Upstream attempts started in the last 24 hours.
    pub attempts_last_day: u32,
    /// Of those, attempts that failed.
    pub failed_attempts_last_day: u32,
    /// The latest failed attempts, newest first (at most 10).
    pub recent_errors: Vec<RequestLogEntryView>,
}

/// What changed, pushed to the UI (IPC events, `GET /api/events`) so it refetches
/// instead of polling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub enum ChangeTopic {
    /// A provider breaker changed state.
    Breakers,
    /// A connection cooldown started, escalated or ended.
    Cooldowns,
    /// A model lockout started or ended.
    Lockouts,
    /// A Claude account's usage-wall lane or limit-reset state changed.
    Lanes,
    /// A connection was created, changed or deleted.
    Connections,
    /// The resilience settings changed.
    Settings,
    /// Routing was paused or resumed.
    Routing,
    /// An exclusive session lease was acquired, renewed, moved or ended.
    Leases,
}

impl ChangeTopic {
    /// Every topic.
    pub const ALL: [ChangeTopic; 8] = [
        ChangeTopic::Breakers,
        ChangeTopic::Cooldowns,
        ChangeTopic::Lockouts,
        ChangeTopic::Lanes,
        ChangeTopic::Connections,
        ChangeTopic::Settings,
        ChangeTopic::Routing,
        ChangeTopic::Leases,
    ];

    /// The event name (`breakersChanged`, ...), used for SSE events and IPC events.
    pub fn event_name(self) -> &'static str {
        match self {
            ChangeTopic::Breakers => "breakersChanged",
            ChangeTopic::Cooldowns => "cooldownsChanged",
            ChangeTopic::Lockouts => "lockoutsChanged",
            ChangeTopic::Lanes => "lanesChanged",
            ChangeTopic::Connections => "connectionsChanged",
            ChangeTopic::Settings => "settingsChanged",
            ChangeTopic::Routing => "routingChanged",
            ChangeTopic::Leases => "leasesChanged",
        }
    }
}

/// One change notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// What changed.
    pub topic: ChangeTopic,
    /// When.
    pub at: UnixMillis,
}
