//! Stage 2: send the request and wait for the answer's headers, within the
//! readiness budget (streamed requests) or the attempt deadline (plain ones), on the
//! gateway's clock. An OAuth 401 refreshes the token once and resends; the Claude
//! usage-wall hook sees every answer of a Claude OAuth attempt and may resend on the
//! same connection (now, or after a wait that stays inside the budget).

use std::sync::Arc;

use http::StatusCode;
use switchyard_resilience::claude_wall::WaitWindow;

use super::AttemptCx;
use super::credentials::refresh_error;
use crate::proxy::claude_wall::{WallAction, WallHook};
use crate::proxy::headers::{LONG_CONTEXT_BETA_FLAG, add_beta_flag, upstream_headers};
use crate::proxy::hop::HopResponse;
use crate::proxy::translation::native_body;
use crate::proxy::upstream_error::UpstreamError;
use crate::routing::Connection;
use switchyard_types::ApiFormat;

/// Sends until there is an answer to judge. A wait the usage wall asks for is the
/// gateway's own (keep-alives flow meanwhile) and does not spend the upstream's
/// readiness budget: it restarts after the wait, within the attempt deadline.
pub(super) async fn send(
    cx: &mut AttemptCx<'_>,
    mut sender: Arc<Connection>,
    wait: &mut WaitWindow,
) -> Result<HopResponse, UpstreamError> {
    let (state, req, candidate) = (cx.state, cx.req, cx.candidate);
    let conn = &candidate.connection;
    let mut refreshed_after_401 = false;
    let wall_hook = WallHook::for_connection(conn);
    // A same-format attempt sends the client's bytes with only the model spliced
    // (and keeps the query string); a translated one sends the upstream's format.
    let (endpoint, query, body) = match cx.translation {
        None => (req.endpoint, req.query.as_deref(), native_body(req, candidate)),
        Some(t) => (t.endpoint(), None, t.request_body(req, candidate).map_err(UpstreamError::Local)?),
    };
    loop {
        let Some(url) = sender.url(endpoint, query) else {
            let shown = crate::routing::connection::without_credentials(&conn.base_url);
            return Err(UpstreamError::Local(format!("base URL '{shown}' is not a valid URL")));
        };
        let mut headers = upstream_headers(&req.headers, &sender);
        if req.long_context && sender.api_format == ApiFormat::Anthropic {
            add_beta_flag(&mut headers, LONG_CONTEXT_BETA_FLAG);
        }
        let sent_slow =
            wall_hook.as_ref().is_some_and(|h| h.stamp(&state.claude_wall, &sender, &mut headers, state));
        let request = state.hop.post(url, headers, body.clone());
        let mut timer = cx.timer(cx.budgets.wait_until());
        let response = tokio::select! {
            sent = request => sent.map_err(|e| UpstreamError::from_hop(&*e, true))?,
            () = timer.wait() => return Err(cx.budgets.expired("answer")),
        };
        cx.keep(timer);
        if response.status() == StatusCode::UNAUTHORIZED && sender.oauth.is_some() && !refreshed_after_401 {
            refreshed_after_401 = true;
            drop(response);
            // Boxed, as in `credentials::usable`: rare, and large inline.
            sender = Box::pin(state.refresher.refresh(&sender, &state.routing, &state.management))
                .await
                .map_err(refresh_error)?;
            continue;
        }
        let Some(hook) = &wall_hook else { return Ok(response) };
        let _waiting = req.waits.enter();
        // Boxed: only Claude OAuth attempts take it, and inline it would grow every
        // request's future by its size.
        match Box::pin(hook.after_response(state, &sender, &response, sent_slow, wait, cx.budgets.deadline))
            .await
        {
            WallAction::Proceed => return Ok(response),
            WallAction::Retry(delay) => {
                drop(response);
                if !delay.is_zero() {
                    state.sleeper.sleep(delay).await;
                }
                cx.budgets.restart_readiness(state.clock.now_mono());
            }
        }
    }
}
