//! The application a client connection serves: the four inference endpoints
//! dispatched directly, everything else through the router.
//!
//! Why not everything through the router: at the few requests a second agents send,
//! each request runs with cold caches, and its cost follows the amount of code it
//! runs. Timed by the kernel's own timestamps (`scripts/latency-legs.sh`), about
//! 36 µs passed between hyper's parse of an inference request and the handler's first
//! poll at 10 req/s, where the reference relay's whole inbound leg takes 7–8 µs:
//! route matching, the edge layer's boxed future and service clone, the method
//! router, the extractors (one of which clones the header map) and the handler's
//! boxed 4.5 KB future. The direct dispatch runs the same guards and the same handler
//! ([`inference::handle`]) with none of that (8 % fewer instructions per request on
//! the connection's thread, ADR 0014); the router keeps the four routes for their
//! method handling, and every other route.

use std::convert::Infallible;
use std::net::SocketAddr;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::Response;
use http::{Method, Request};
use tower_service::Service;

use super::{edge, inference};
use crate::state::AppState;

/// The router and the state its inference fast path needs.
#[derive(Clone)]
pub struct App {
    router: Router,
    /// `None` only for a bare router (the connection layer's own tests).
    state: Option<AppState>,
}

impl App {
    /// The whole application on `state`.
    pub fn new(state: AppState) -> App {
        App { router: super::router(state.clone()), state: Some(state) }
    }

    /// `router` alone, without the inference fast path.
    #[cfg(test)]
    pub(crate) fn routes_only(router: Router) -> App {
        App { router, state: None }
    }

    /// Answers one request from `peer`.
    pub async fn call(&self, mut request: Request<Body>, peer: SocketAddr) -> Response {
        if let Some(state) = &self.state
            && request.method() == Method::POST
            && let Some(endpoint) = inference::endpoint_for(request.uri().path())
        {
            // What the edge layer does for a `/v1` route: the guards, then the
            // handler's answer as it is (no management envelope).
            if let Some(refused) = edge::refusal(state, &request) {
                return refused;
            }
            let (parts, body) = request.into_parts();
            return inference::handle(state, endpoint, Some(peer), &parts.uri, parts.headers, body).await;
        }
        request.extensions_mut().insert(ConnectInfo(peer));
        // A `Router` is always ready, so `call` needs no `poll_ready` first.
        let result: Result<Response, Infallible> = self.router.clone().call(request).await;
        match result {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}
