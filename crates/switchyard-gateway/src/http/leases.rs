//! `POST /api/v1/session-leases` (SPEC §4.4, §7): an agent acquires, renews,
//! releases or asks about its exclusive lease with its own client key (not the
//! management token). Checks run in this order, so a caller learns the first
//! thing to fix: client key (401), the key's right to lease (403), a JSON body
//! (415), the owner header (400), the document (400), then the action.
//!
//! Answers carry the lease's state, generation and times, and the provider and
//! name of the leased connection; never the connection's id, a credential or
//! the owner token.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use switchyard_resilience::Decision;
use switchyard_types::{ClientFormat, ErrorCode, UnixMillis};

use super::body::read_whole;
use super::guard::authenticate;
use super::inference::require_json_content_type;
use crate::errors::{ErrorFormat, GatewayError, parse_document};
use crate::leases::owner::{claim_from, owner_required};
use crate::leases::{EndReason, capacity_unavailable, clamp_ttl, may_lease, stale, state_name};
use crate::routing::{CandidatePlan, ClientKey, RoutingTable};
use crate::state::AppState;
use crate::store::{AcquireOutcome, LeaseHolder, LeaseRow, LeaseSlot};

/// Largest lease call body.
const MAX_BODY_BYTES: usize = 16 * 1024;

/// The lease call document.
#[derive(Debug, Deserialize)]
#[serde(tag = "action", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
enum LeaseCall {
    /// Take a connection serving `model` (or keep the one this owner holds).
    Acquire {
        model: String,
        #[serde(default)]
        ttl_ms: Option<u64>,
    },
    /// Extend the lease.
    Renew {
        generation: i64,
        #[serde(default)]
        ttl_ms: Option<u64>,
    },
    /// Give it back.
    Release {
        generation: i64,
        #[serde(default)]
        reason: Option<ReleaseReason>,
    },
    /// Where it stands.
    Status { generation: i64 },
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ReleaseReason {
    OwnerExit,
    ClientCancelled,
}

/// The leased connection, as shown to the agent.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct LeasedConnection {
    provider: String,
    display_name: Option<String>,
}

/// The answer to every lease call.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct LeaseDoc {
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'static str>,
    generation: i64,
    acquired_at: UnixMillis,
    renewed_at: UnixMillis,
    expires_at: UnixMillis,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_reason: Option<String>,
    connection: LeasedConnection,
}

fn doc(table: &RoutingTable, row: &LeaseRow, result: Option<&'static str>) -> LeaseDoc {
    LeaseDoc {
        state: state_name(row.state),
        result,
        generation: row.generation,
        acquired_at: row.acquired_at,
        renewed_at: row.renewed_at,
        expires_at: row.expires_at,
        end_reason: row.end_reason.clone(),
        connection: LeasedConnection {
            provider: row.provider.clone(),
            display_name: table.by_id.get(&row.connection_id).map(|c| c.name.clone()),
        },
    }
}

/// The handler.
pub async fn session_leases(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match call(&state, peer, &headers, body).await {
        Ok(doc) => (StatusCode::OK, axum::Json(doc)).into_response(),
        Err(e) => e.render(ErrorFormat::Management),
    }
}

async fn call(
    state: &AppState,
    peer: SocketAddr,
    headers: &HeaderMap,
    body: Body,
) -> Result<LeaseDoc, GatewayError> {
    let table = state.routing.load_full();
    let key = authenticate(&table, headers, Some(peer))?.ok_or_else(|| {
        GatewayError::new(
            ErrorCode::AuthenticationError,
            "a lease belongs to a client key: send it as 'Authorization: Bearer <key>' or 'x-api-key'",
        )
    })?;
    may_lease(&key)?;
    require_json_content_type(headers)?;
    let claim = claim_from(headers)?.ok_or_else(owner_required)?;
    let bytes = read_whole(body, headers, MAX_BODY_BYTES).await?;
    let call: LeaseCall = parse_document(&bytes)?;
    let holder = LeaseHolder { owner_hash: &claim.owner_hash, api_key_id: &key.id };
    let book = &state.resilience.leases;
    let now = state.clock.now_wall();
    let internal = GatewayError::internal;
    match call {
        LeaseCall::Acquire { model, ttl_ms } => {
            let slots = free_candidates(state, &table, &model, &key, now)?;
            let (row, result) = match book
                .acquire(holder, &slots, now, clamp_ttl(ttl_ms))
                .await
                .map_err(internal)?
            {
                AcquireOutcome::Acquired(row) => (row, "acquired"),
                AcquireOutcome::Reused(row) => (row, "reused"),
                AcquireOutcome::OwnerBusy => {
                    return Err(GatewayError::new(
                        ErrorCode::LeaseOwnerConflict,
                        format!(
                            "this owner already holds a lease through another client key or on a connection that \
                         does not serve '{model}'; release it first"
                        ),
                    ));
                }
                AcquireOutcome::NoFreeConnection { earliest_expiry } => {
                    return Err(capacity_unavailable(now, earliest_expiry));
                }
            };
            // The key or connection may have changed while this acquire ran (the
            // check above read the routing table from before): check the lease
            // against the current one, which ends it if it is no longer allowed.
            state.management.reconcile_leases_now().await?;
            if book.active().of_owner(&row.owner_hash, now).is_none() {
                return Err(GatewayError::new(
                    ErrorCode::LeaseNotPermitted,
                    "the client key's permissions or the connection changed while the lease was taken; it was ended",
                ));
            }
            Ok(doc(&table, &row, Some(result)))
        }
        LeaseCall::Renew { generation, ttl_ms } => {
            let row =
                book.renew(holder, positive(generation)?, now, clamp_ttl(ttl_ms)).await.map_err(internal)?;
            row.map(|r| doc(&table, &r, None)).ok_or_else(no_active)
        }
        LeaseCall::Release { generation, reason } => {
            let reason = match reason {
                Some(ReleaseReason::ClientCancelled) => EndReason::ClientCancelled,
                Some(ReleaseReason::OwnerExit) | None => EndReason::OwnerExit,
            };
            let row = book.release(holder, positive(generation)?, now, reason).await.map_err(internal)?;
            row.map(|r| doc(&table, &r, None)).ok_or_else(no_active)
        }
        LeaseCall::Status { generation } => {
            let row = book.status(holder, positive(generation)?, now).await.map_err(internal)?;
            row.map(|r| doc(&table, &r, None))
                .ok_or_else(|| stale("this owner and key hold no lease at that generation"))
        }
    }
}

fn positive(generation: i64) -> Result<i64, GatewayError> {
    if generation > 0 {
        return Ok(generation);
    }
    Err(GatewayError::validation(vec![switchyard_types::api::ValidationIssue {
        path: "/generation".to_owned(),
        message: "must be a positive integer (the generation the acquire answered)".to_owned(),
    }]))
}

fn no_active() -> GatewayError {
    stale("this owner and key hold no active lease at that generation (released, expired, or a newer one)")
}

/// The plan for `model` as `key` may route it. A lease holds a connection, not a
/// wire format: every format's connections are in the plan (requests to the leased
/// one are translated as needed).
fn plan_any_format(
    table: &RoutingTable,
    model: &str,
    key: &ClientKey,
) -> Result<Arc<CandidatePlan>, GatewayError> {
    table.plan(model, ClientFormat::AnthropicMessages, Some(key))
}

/// The connections that may serve `model` for `key` now (not ruled out by the
/// resilience engine), in routing order, one slot per connection.
fn free_candidates(
    state: &AppState,
    table: &RoutingTable,
    model: &str,
    key: &ClientKey,
    now: UnixMillis,
) -> Result<Vec<LeaseSlot>, GatewayError> {
    let plan = plan_any_format(table, model, key)?;
    let selection = state.resilience.engine.filter(&plan.candidates);
    let code = match selection.decision(now) {
        Decision::Proceed => None,
        Decision::AllCoolingDown { retry_after_secs, .. } => {
            Some((ErrorCode::AllTargetsCoolingDown, Some(retry_after_secs)))
        }
        Decision::NoExecutableTargets => Some((ErrorCode::NoExecutableTargets, None)),
    };
    if let Some((code, retry)) = code {
        let excluded = selection.excluded_views(&plan.candidates, now);
        return Err(crate::proxy::excluded_targets_error(
            model,
            plan.candidates.len(),
            code,
            &excluded,
            retry,
        ));
    }
    let mut slots: Vec<LeaseSlot> = Vec::new();
    for &i in &selection.eligible {
        let Some(c) = plan.candidates.get(i) else { continue };
        if !slots.iter().any(|(_, id)| **id == *c.connection.id) {
            slots.push((c.connection.provider.to_string(), c.connection.id.to_string()));
        }
    }
    Ok(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_document_names_its_action_and_refuses_strangers() {
        let parse = |s: &str| parse_document::<LeaseCall>(s.as_bytes());
        assert!(matches!(
            parse(r#"{"action":"acquire","model":"m","ttlMs":5000}"#),
            Ok(LeaseCall::Acquire { ttl_ms: Some(5000), .. })
        ));
        assert!(matches!(
            parse(r#"{"action":"release","generation":2,"reason":"client-cancelled"}"#),
            Ok(LeaseCall::Release { generation: 2, reason: Some(ReleaseReason::ClientCancelled) })
        ));
        for bad in [
            r#"{"action":"steal","generation":1}"#,
            r#"{"action":"renew"}"#,
            r#"{"action":"renew","generation":1,"ttl":5}"#,
            r#"{"generation":1}"#,
        ] {
            let e = parse(bad).err().map(|e| e.code);
            assert_eq!(e, Some(ErrorCode::ValidationFailed), "{bad}");
        }
    }
}
