//! Client inference endpoints: require a JSON body, authenticate, read and validate
//! the body, plan the candidates, forward. Errors are rendered in the endpoint's
//! own wire format.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use http::{HeaderMap, HeaderName, StatusCode, Uri, header};
use switchyard_types::{ApiFormat, ClientFormat, ErrorCode};

use super::body::read_whole;
use super::guard::authenticate;
use crate::affinity::session_of;
use crate::errors::{ErrorFormat, GatewayError, Rendered};
use crate::leases::owner::claim_from;
use crate::proxy::{ClientBody, ForwardRequest, GatewayWaits, forward, lease, refused_row, translation};
use crate::routing::UpstreamEndpoint;
use crate::state::AppState;

/// What distinguishes the four client endpoints.
pub struct Endpoint {
    format: ClientFormat,
    upstream: UpstreamEndpoint,
    pub(super) route: &'static str,
}

/// `POST /v1/messages` (Anthropic Messages).
pub static MESSAGES: Endpoint = Endpoint {
    format: ClientFormat::AnthropicMessages,
    upstream: UpstreamEndpoint::Messages,
    route: "/v1/messages",
};

/// `POST /v1/messages/count_tokens`.
pub static COUNT_TOKENS: Endpoint = Endpoint {
    format: ClientFormat::AnthropicMessages,
    upstream: UpstreamEndpoint::CountTokens,
    route: "/v1/messages/count_tokens",
};

/// `POST /v1/chat/completions`.
pub static CHAT_COMPLETIONS: Endpoint = Endpoint {
    format: ClientFormat::OpenaiChat,
    upstream: UpstreamEndpoint::ChatCompletions,
    route: "/v1/chat/completions",
};

/// `POST /v1/responses`.
pub static RESPONSES: Endpoint = Endpoint {
    format: ClientFormat::OpenaiResponses,
    upstream: UpstreamEndpoint::Responses,
    route: "/v1/responses",
};

/// The four client endpoints: the router's routes and the connection's direct
/// dispatch ([`super::App::call`]) are both made from this list, by `route`.
pub static ENDPOINTS: [&Endpoint; 4] = [&CHAT_COMPLETIONS, &MESSAGES, &RESPONSES, &COUNT_TOKENS];

/// The endpoint a POST to exactly `path` reaches, if it is one of the four.
pub fn endpoint_for(path: &str) -> Option<&'static Endpoint> {
    ENDPOINTS.iter().copied().find(|ep| ep.route == path)
}

/// The POST handler of one client endpoint, as a route of the router.
pub fn post_handler(ep: &'static Endpoint) -> MethodRouter<AppState> {
    post(
        move |State(state): State<AppState>,
              ConnectInfo(peer): ConnectInfo<SocketAddr>,
              uri: Uri,
              headers: HeaderMap,
              body: Body| async move { handle(&state, ep, Some(peer), &uri, headers, body).await },
    )
}

/// One request to a client endpoint, answered: forwarded, or refused in the
/// endpoint's wire format (and logged as refused).
pub async fn handle(
    state: &AppState,
    ep: &'static Endpoint,
    peer: Option<SocketAddr>,
    uri: &Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut seen = Refusal::default();
    match prepare_and_forward(state, peer, uri, headers, body, ep, &mut seen).await {
        Ok(response) => response,
        Err(e) => {
            let response = e.into_response();
            let at = state.clock.now_wall();
            state.log.record_request(refused_row(ep.route, at, seen.api_key_id, seen.model, &response));
            response
        }
    }
}

/// `GET /v1/responses`: Codex's built-in provider tries a WebSocket here first.
/// Answer at once so it falls back to HTTP streaming.
pub async fn responses_websocket() -> Response {
    GatewayError::new(
        ErrorCode::WebsocketUnsupported,
        "WebSocket transport is not offered; use POST /v1/responses with \"stream\": true",
    )
    .render(ErrorFormat::Client(ClientFormat::OpenaiResponses))
}

/// `HEAD`/`GET /api/hello`: the reachability probe Claude Code sends.
pub async fn hello() -> impl IntoResponse {
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], "{\"ok\":true}")
}

/// What a request refused before forwarding had shown of itself by then, for its
/// row in the request log.
#[derive(Debug, Default)]
struct Refusal {
    api_key_id: Option<Arc<str>>,
    model: String,
}

impl Refusal {
    /// A refusal of a parsed body: its row names the model (copied only now, not on
    /// every request in case of one).
    fn refused_after_parse(&mut self, body: &ClientBody, e: GatewayError, format: ErrorFormat) -> Rendered {
        body.model().clone_into(&mut self.model);
        Rendered(e, format)
    }
}

async fn prepare_and_forward(
    state: &AppState,
    peer: Option<SocketAddr>,
    uri: &Uri,
    headers: HeaderMap,
    body: Body,
    ep: &Endpoint,
    seen: &mut Refusal,
) -> Result<Response, Rendered> {
    let format = ErrorFormat::Client(ep.format);
    if state.management.control().is_paused() {
        return Err(Rendered(
            GatewayError::new(
                ErrorCode::RoutingPaused,
                "routing is paused in Switchyard (tray menu: Resume routing, or POST /api/gateway/pause \
                 with {\"paused\": false})",
            ),
            format,
        ));
    }
    require_json_content_type(&headers).map_err(|e| Rendered(e, format))?;
    let table = state.routing.load();
    let key = authenticate(&table, &headers, peer).map_err(|e| Rendered(e, format))?;
    seen.api_key_id = key.as_ref().map(|k| k.id.clone());
    let lease = match claim_from(&headers).map_err(|e| Rendered(e, format))? {
        Some(claim) => Some(
            lease::admit(state, claim, key.as_deref(), state.clock.now_wall())
                .map_err(|e| Rendered(e, format))?,
        ),
        None => None,
    };
    let bytes =
        read_whole(body, &headers, state.options.max_body_bytes).await.map_err(|e| Rendered(e, format))?;
    let body = ClientBody::parse(bytes).map_err(|e| Rendered(e, format))?;
    // A `[1m]` id routes like its base id (with the context beta), unless a combo,
    // alias or catalogue entry has that very name: map lookups, nothing listed.
    let (route_model, long_context) = match body.model().strip_suffix(LONG_CONTEXT_SUFFIX) {
        Some(base) if !table.names_exactly(body.model()) => (base, true),
        _ => (body.model(), false),
    };
    let plan = table.plan(route_model, ep.format, key.as_deref());
    let mut plan = plan.map_err(|e| seen.refused_after_parse(&body, e, format))?;
    if ep.upstream == UpstreamEndpoint::CountTokens {
        // Only Anthropic counts tokens; without an Anthropic connection the gateway
        // answers with its documented estimate.
        // A copy: the plan is shared with every request for this model.
        Arc::make_mut(&mut plan).candidates.retain(|c| c.connection.api_format == ApiFormat::Anthropic);
        if plan.candidates.is_empty() {
            return Ok(count_tokens_estimate(&body));
        }
    } else if plan.translates
        && let Err(e) = translation::check(ep.format, body.tree())
    {
        let e = GatewayError::new(ErrorCode::InvalidRequest, format!("invalid request body: {e}"));
        return Err(seen.refused_after_parse(&body, e, format));
    }
    // Session affinity costs nothing while it is off (the default).
    let affinity_on = state.resilience.settings().session_affinity_ttl_ms > 0;
    let session = if affinity_on {
        session_of(&headers, body.raw()).map(|s| s.scoped_to(key.as_deref().map(|k| &*k.id)))
    } else {
        None
    };
    let body_streaming = body.streaming();
    let request = ForwardRequest {
        format: ep.format,
        endpoint: ep.upstream,
        route: ep.route,
        query: uri.query().map(str::to_owned),
        headers,
        body,
        plan,
        api_key_id: key.map(|k| k.id.clone()),
        request_id: crate::proxy::new_request_id(),
        waits: GatewayWaits::for_request(body_streaming),
        session,
        lease,
        long_context,
    };
    Ok(forward(state.clone(), Box::new(request)).await)
}

/// The suffix Claude Code puts on a model id to ask for its 1M-token context window.
pub const LONG_CONTEXT_SUFFIX: &str = "[1m]";

/// `count_tokens` answered by the gateway ([`switchyard_translate::estimate_input_tokens`]).
fn count_tokens_estimate(body: &ClientBody) -> Response {
    let tokens = switchyard_translate::estimate_input_tokens(body.tree());
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (HeaderName::from_static("x-switchyard-token-estimate"), "chars/4"),
        ],
        format!("{{\"input_tokens\":{tokens}}}"),
    )
        .into_response()
}

/// Inference bodies are JSON: `application/json` (parameters allowed) or
/// `application/*+json`, declared once. Browsers send `text/plain` and form bodies
/// cross-site without a preflight; those never reach an upstream.
/// `application/json` or `application/<anything>+json`, in any case.
fn is_json_media_type(essence: &str) -> bool {
    let (kind, subtype) = essence.split_at_checked(12).unwrap_or_default();
    kind.eq_ignore_ascii_case("application/")
        && (subtype.eq_ignore_ascii_case("json")
            || subtype.len() >= 5
                && subtype.get(subtype.len() - 5..).is_some_and(|end| end.eq_ignore_ascii_case("+json")))
}

pub(super) fn require_json_content_type(headers: &HeaderMap) -> Result<(), GatewayError> {
    let mut values = headers.get_all(header::CONTENT_TYPE).iter();
    let (first, repeated) = (values.next(), values.next().is_some());
    // The media type without parameters, compared without regard to case (and
    // without a lower-cased copy: this runs on every request).
    let essence = first.and_then(|v| v.to_str().ok()).map(|v| v.split(';').next().unwrap_or_default().trim());
    let json = essence.is_some_and(is_json_media_type);
    if json && !repeated {
        return Ok(());
    }
    let sent = match (first.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()), repeated) {
        (_, true) => "more than one Content-Type".to_owned(),
        (Some(v), false) => format!("Content-Type '{v}'"),
        (None, false) => "no Content-Type".to_owned(),
    };
    Err(GatewayError::new(
        ErrorCode::UnsupportedMediaType,
        format!("the request body must be JSON: send 'Content-Type: application/json' (got {sent})"),
    ))
}

#[cfg(test)]
mod tests {
    use super::is_json_media_type;

    #[test]
    fn json_media_types_in_any_case() {
        for m in ["application/json", "Application/JSON", "application/vnd.api+json", "APPLICATION/LD+JSON"] {
            assert!(is_json_media_type(m), "{m}");
        }
        for m in [
            "text/json",
            "application/jsonx",
            "application/json+x",
            "application/",
            "json",
            "",
            "applicatio/json",
        ] {
            assert!(!is_json_media_type(m), "{m}");
        }
    }
}
