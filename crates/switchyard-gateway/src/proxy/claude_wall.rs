//! The executor's Claude usage-wall hook (SPEC 4.3): stamps `anthropic-usage-limit:
//! slow` on requests in the low-priority lane, and after each response asks the pure
//! wall logic (`switchyard_resilience::claude_wall`) what to do: relay, take the
//! ordinary cooldown path, retry the same connection (now, or after a wait), or run
//! the session limit reset (usage GET, then the reset POST) first.
//!
//! Only Claude OAuth connections with `lowPriorityMode` or `autoLimitReset` on are
//! touched; everything else passes through. The caught wall 429 never reaches the
//! cooldown path. Fail-open: a failed usage or reset call defers the next try (the
//! wall logic memoizes it) and the request continues down the lane or the ordinary
//! path.

use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderName, HeaderValue, header};
use rand::Rng;
use switchyard_resilience::claude_wall::{
    ClaimOutcome, ClaudeWall, JuniperTide, Observation, ResetStep, USAGE_LIMIT_HEADER, USAGE_LIMIT_SLOW,
    WaitWindow, WallDecision, WallOptions, WallSignals, discover_org_uuid,
};
use switchyard_types::ApiFormat;
use switchyard_types::resilience::ClaudeResetResult;

use crate::proxy::hop::HopResponse;
use crate::routing::Connection;
use crate::routing::connection::UpstreamAuth;
use crate::state::GatewayState;

/// What the attempt does next.
pub enum WallAction {
    /// Handle the response as usual (relay it, or fail over on its status).
    Proceed,
    /// Drop the response and retry the same connection after this wait.
    Retry(Duration),
}

/// The hook for one attempt on one connection.
pub struct WallHook {
    opts: WallOptions,
    bearer: HeaderValue,
}

/// Claude Code's user agent on the usage and reset calls (they are its endpoints).
const CLI_USER_AGENT: &str = "claude-cli/2.1.332 (external, cli)";

impl WallHook {
    /// The hook, for Claude OAuth connections with a wall option on.
    pub fn for_connection(conn: &Connection) -> Option<WallHook> {
        let UpstreamAuth::OauthBearer(bearer) = &conn.auth else { return None };
        if conn.api_format != ApiFormat::Anthropic {
            return None;
        }
        let opts = WallOptions::from_provider_specific(Some(&conn.provider_specific));
        opts.any().then(|| WallHook { opts, bearer: bearer.clone() })
    }

    /// Adds the slow header when the connection's lane is active; returns whether it did.
    pub fn stamp(
        &self,
        wall: &ClaudeWall,
        conn: &Connection,
        headers: &mut HeaderMap,
        state: &GatewayState,
    ) -> bool {
        let slow = wall.sends_slow(&conn.id, state.clock.now_wall());
        if slow {
            headers.insert(
                HeaderName::from_static(USAGE_LIMIT_HEADER),
                HeaderValue::from_static(USAGE_LIMIT_SLOW),
            );
        }
        slow
    }

    /// Decides after a response of this connection (its status and headers; the body
    /// is left unread for the caller); waits stay inside the attempt's `deadline`. A
    /// change of the account's lane or reset state is published to the UI's change feed.
    pub async fn after_response(
        &self,
        state: &GatewayState,
        conn: &Connection,
        response: &HopResponse,
        sent_slow: bool,
        wait: &mut WaitWindow,
        deadline: Instant,
    ) -> WallAction {
        let before = state.claude_wall.view(&conn.id, state.clock.now_wall());
        let action = self.decide(state, conn, response, sent_slow, wait, deadline).await;
        if state.claude_wall.view(&conn.id, state.clock.now_wall()) != before {
            state.management.control().notify(switchyard_types::status::ChangeTopic::Lanes);
        }
        action
    }

    async fn decide(
        &self,
        state: &GatewayState,
        conn: &Connection,
        response: &HopResponse,
        sent_slow: bool,
        wait: &mut WaitWindow,
        deadline: Instant,
    ) -> WallAction {
        let status = response.status().as_u16();
        let wall = &state.claude_wall;
        let now = state.clock.now_wall();
        let remaining = deadline.saturating_duration_since(state.clock.now_mono());
        let obs = Observation {
            status,
            signals: WallSignals::parse(response.headers(), now),
            sent_slow,
            remaining_budget_ms: Some(u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX)),
        };
        let mut decision = self.observe(wall, &conn.id, &obs, wait, now);
        loop {
            match decision {
                WallDecision::Relay { lane_ended } => {
                    if let Some(end) = lane_ended {
                        tracing::info!(event = "lane.ended", connection = %conn.id, reason = ?end);
                    }
                    return WallAction::Proceed;
                }
                WallDecision::TakeCooldownPath { why } => {
                    tracing::debug!(event = "lane.cooldown_path", connection = %conn.id, why = ?why);
                    return WallAction::Proceed;
                }
                WallDecision::RetrySameConnection { delay_ms, via } => {
                    tracing::info!(event = "lane.retry", connection = %conn.id, via = ?via, delay_ms);
                    return WallAction::Retry(Duration::from_millis(delay_ms));
                }
                WallDecision::AwaitLimitReset { poll_ms } => {
                    state.sleeper.sleep(Duration::from_millis(poll_ms)).await;
                    let now = state.clock.now_wall();
                    decision = self.observe(wall, &conn.id, &obs, wait, now);
                }
                WallDecision::RunLimitReset { usage_path } => {
                    let outcome = self.run_limit_reset(state, conn, usage_path).await;
                    tracing::info!(event = "limit_reset.finished", connection = %conn.id, result = ?outcome);
                    let now = state.clock.now_wall();
                    decision = wall.finish_limit_reset(&conn.id, &self.opts, outcome, &obs, wait, now);
                }
            }
        }
    }

    /// One observation with fresh jitter (the thread-local RNG is not held across
    /// an await, so the request future stays `Send`).
    fn observe(
        &self,
        wall: &ClaudeWall,
        conn: &str,
        obs: &Observation,
        wait: &mut WaitWindow,
        now: switchyard_types::UnixMillis,
    ) -> WallDecision {
        let mut rng = rand::rng();
        let mut jitter = || rng.random::<f64>();
        wall.observe(conn, &self.opts, obs, wait, now, &mut jitter)
    }

    /// The usage GET, the optional organization lookup and the reset POST.
    async fn run_limit_reset(
        &self,
        state: &GatewayState,
        conn: &Connection,
        usage_path: &str,
    ) -> ClaimOutcome {
        let wall = &state.claude_wall;
        let usage = self.call(state, conn, reqwest::Method::GET, usage_path, None, 5_000).await;
        let tide = usage.and_then(|(s, b)| JuniperTide::from_http(s, &b));
        let mut step = wall.reset_on_usage(&conn.id, &self.opts, tide.as_ref());
        loop {
            match step {
                ResetStep::Done(outcome) => return outcome,
                ResetStep::DiscoverOrganization { path } => {
                    let found = self.call(state, conn, reqwest::Method::GET, path, None, 5_000).await;
                    let org = found
                        .filter(|(s, _)| (200..300).contains(s))
                        .and_then(|(_, b)| serde_json::from_slice(&b).ok())
                        .and_then(|doc| discover_org_uuid(&doc));
                    step = wall.reset_claim_step(&conn.id, org.as_deref());
                }
                ResetStep::Claim { path, body } => {
                    return match self
                        .call(state, conn, reqwest::Method::POST, &path, Some(body), 25_000)
                        .await
                    {
                        Some((s, b)) => ClaimOutcome::from_http(s, &b),
                        None => ClaimOutcome::of(ClaudeResetResult::Error),
                    };
                }
            }
        }
    }

    /// One call to the account's own API with Claude Code's headers; `None` on a
    /// transport failure.
    async fn call(
        &self,
        state: &GatewayState,
        conn: &Connection,
        method: reqwest::Method,
        path: &str,
        body: Option<&'static str>,
        timeout_ms: u64,
    ) -> Option<(u16, bytes::Bytes)> {
        let url = format!("{}{path}", conn.base_url);
        let mut request = state
            .http
            .request(method, url)
            .header(header::ACCEPT, "application/json, text/plain, */*")
            .header(header::AUTHORIZATION, self.bearer.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::USER_AGENT, CLI_USER_AGENT)
            .header("x-app", "cli")
            .header("anthropic-beta", crate::proxy::headers::OAUTH_BETA_FLAG)
            .timeout(Duration::from_millis(timeout_ms));
        if let Some(b) = body {
            request = request.body(b);
        }
        let response = request.send().await.ok()?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.ok()?;
        Some((status, bytes))
    }
}
