//! Stage 1: a token the upstream will accept. An OAuth token about to expire is
//! refreshed first (single-flight per connection). A token endpoint that cannot be
//! reached is not an auth failure: a token that is still valid is used as it is, an
//! expired one fails the attempt as `TokenEndpoint` (cooldown, no `expired` count).

use std::sync::Arc;

use super::AttemptCx;
use crate::oauth::{RefreshError, expired, needs_refresh};
use crate::proxy::upstream_error::UpstreamError;
use crate::routing::Connection;

/// The connection to send with (its token refreshed when due).
pub(super) async fn usable(cx: &AttemptCx<'_>) -> Result<Arc<Connection>, UpstreamError> {
    let conn = &cx.candidate.connection;
    let state = cx.state;
    let now = state.clock.now_wall();
    if !needs_refresh(conn, now) {
        return Ok(conn.clone());
    }
    // Boxed: the refresh (an HTTP call to the token endpoint) is rare, and inline its
    // future would sit in every request's future, which axum copies into a box.
    match Box::pin(state.refresher.refresh(conn, &state.routing, &state.management)).await {
        Ok(fresh) => Ok(fresh),
        Err(RefreshError::Unreachable(m)) if !expired(conn, state.clock.now_wall()) => {
            tracing::warn!(event = "oauth.refresh_deferred", reason = %m);
            Ok(conn.clone())
        }
        Err(e) => Err(refresh_error(e)),
    }
}

/// A failed refresh as an attempt failure.
pub(super) fn refresh_error(e: RefreshError) -> UpstreamError {
    match e {
        RefreshError::Rejected(m) => UpstreamError::TokenRejected(m),
        RefreshError::Unreachable(m) => UpstreamError::TokenEndpoint(m),
        RefreshError::Local(m) => UpstreamError::Local(m),
    }
}
