//! `GET /v1/models`: every routable model id, in the OpenAI list format, or in the
//! Anthropic format when the client sends `anthropic-version` (Claude Code's model
//! discovery).

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, State};
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use serde_json::{Value, json};
use switchyard_types::ClientFormat;

use super::guard::authenticate;
use super::inference::LONG_CONTEXT_SUFFIX;
use crate::errors::ErrorFormat;
use crate::state::AppState;

/// Lists routable models.
pub async fn list_models(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let anthropic = headers.contains_key("anthropic-version");
    let format = if anthropic { ClientFormat::AnthropicMessages } else { ClientFormat::OpenaiChat };
    let table = state.routing.load();
    if let Err(e) = authenticate(&table, &headers, Some(peer)) {
        return e.render(ErrorFormat::Client(format));
    }
    let mut models = table.routable_models();
    let body: Value = if anthropic {
        // Claude Code offers the 1M-token context of a Sonnet or Opus model as its
        // own `[1m]` id; routed like the base id, with the context beta flag.
        let long: Vec<(String, String)> = models
            .iter()
            .filter(|(id, _)| {
                let bare = id.rsplit('/').next().unwrap_or(id);
                bare.starts_with("claude-") && (bare.contains("sonnet") || bare.contains("opus"))
            })
            .map(|(id, owner)| (format!("{id}{LONG_CONTEXT_SUFFIX}"), owner.clone()))
            .collect();
        models.extend(long);
        models.sort();
        let data: Vec<Value> = models
            .iter()
            .map(|(id, _)| json!({"type": "model", "id": id, "display_name": id, "created_at": "1970-01-01T00:00:00Z"}))
            .collect();
        json!({
            "data": data,
            "has_more": false,
            "first_id": models.first().map(|m| &m.0),
            "last_id": models.last().map(|m| &m.0),
        })
    } else {
        let data: Vec<Value> = models
            .iter()
            .map(|(id, owner)| json!({"id": id, "object": "model", "created": 0, "owned_by": owner}))
            .collect();
        json!({"object": "list", "data": data})
    };
    Json(body).into_response()
}
