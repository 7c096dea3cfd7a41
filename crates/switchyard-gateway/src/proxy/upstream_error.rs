//! Typed failures of an attempt below HTTP (DESIGN §4): where they come from
//! (the upstream, the token endpoint, or the gateway itself), which engine outcome
//! they are, and what the log and the client are told. Conversions never log.
//!
//! Local failures — the gateway out of file descriptors or memory, a base URL that
//! is not a URL, the client gone — are the gateway's own: they are answered and
//! logged, and never cool a connection or count for a breaker.

use switchyard_resilience::{AttemptOutcome, TransportFailure};

use crate::conn::find_cause;

/// Why an attempt failed before an HTTP answer could be judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamError {
    /// The upstream could not be reached (refused, DNS, TLS).
    Connect(String),
    /// No answer (or no first model event) within the budget.
    Timeout {
        /// What did not arrive.
        waiting_for: &'static str,
        /// The gateway's budget that ran out, in ms (`None`: the HTTP client's own
        /// connect timeout).
        budget_ms: Option<u64>,
    },
    /// The answer broke before its first byte reached the client.
    BrokenBeforeFirstByte(String),
    /// The OAuth token endpoint could not be reached to refresh an expired token.
    TokenEndpoint(String),
    /// The token endpoint rejected the refresh (an auth failure of the account).
    TokenRejected(String),
    /// The gateway's own failure.
    Local(String),
    /// `executionMaxWaitMs` ran out after dispatch (SPEC §4.6): the configured
    /// bound, not the upstream's failure.
    ExecutionTimeout {
        /// The bound, ms.
        budget_ms: u64,
    },
}

/// OS errors that mean the gateway itself ran out of something.
const LOCAL_OS_ERRORS: [i32; 5] = [
    23,  // ENFILE: the system's open-file table is full
    24,  // EMFILE: this process is out of file descriptors
    12,  // ENOMEM
    105, // ENOBUFS
    99,  // EADDRNOTAVAIL: out of local ports
];

impl UpstreamError {
    /// Classifies a failed send or body read of the proxy hop (hyper's errors on the
    /// direct path, reqwest's through a proxy), by what its cause chain holds.
    pub fn from_hop(e: &(dyn std::error::Error + 'static), before_headers: bool) -> UpstreamError {
        if let Some(os) = os_error(e)
            && LOCAL_OS_ERRORS.contains(&os)
        {
            return UpstreamError::Local(format!("the gateway is out of resources: {}", chain(e)));
        }
        if let Some(r) = find_cause::<reqwest::Error>(e) {
            if r.is_builder() {
                return UpstreamError::Local(format!("the request could not be built: {}", chain(e)));
            }
            if r.is_connect() {
                return UpstreamError::Connect(format!("connection failed: {}", chain(e)));
            }
            // A body that stopped (the socket's TCP user timeout, say) also reads as a
            // timeout; it broke mid-answer, which the engine weighs differently from
            // an upstream that never answered.
            if r.is_timeout() && !(r.is_body() || r.is_decode()) {
                return UpstreamError::Timeout { waiting_for: "a connection", budget_ms: None };
            }
        }
        // The connector's failures (refused, DNS, TLS, the connect timeout) all say
        // the upstream could not be reached.
        if find_cause::<hyper_util::client::legacy::Error>(e)
            .is_some_and(hyper_util::client::legacy::Error::is_connect)
            || find_cause::<super::hop::ConnectFailed>(e).is_some()
        {
            return UpstreamError::Connect(format!("connection failed: {}", chain(e)));
        }
        let what = if before_headers { "before its headers" } else { "before its first byte" };
        UpstreamError::BrokenBeforeFirstByte(format!(
            "the upstream closed the connection {what}: {}",
            chain(e)
        ))
    }

    /// The engine's view of it.
    pub fn outcome(&self) -> AttemptOutcome<'static> {
        match self {
            UpstreamError::Connect(_) => AttemptOutcome::Transport(TransportFailure::Connect),
            UpstreamError::Timeout { .. } => AttemptOutcome::Transport(TransportFailure::Timeout),
            UpstreamError::BrokenBeforeFirstByte(_) => {
                AttemptOutcome::Transport(TransportFailure::BrokenBeforeFirstByte)
            }
            UpstreamError::TokenEndpoint(_) => AttemptOutcome::Transport(TransportFailure::TokenEndpoint),
            UpstreamError::TokenRejected(_) => AttemptOutcome::Http {
                status: 401,
                headers: &switchyard_resilience::outcome::NoHeaders,
                body: TOKEN_REJECTED_BODY,
            },
            UpstreamError::Local(_) | UpstreamError::ExecutionTimeout { .. } => AttemptOutcome::Local,
        }
    }

    /// The request log's `error_kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            UpstreamError::Connect(_) => "connect",
            UpstreamError::Timeout { .. } => "timeout",
            UpstreamError::BrokenBeforeFirstByte(_) => "stream_interrupted",
            UpstreamError::TokenEndpoint(_) => "oauth_unreachable",
            UpstreamError::TokenRejected(_) => "oauth_refresh",
            UpstreamError::Local(_) => "local",
            UpstreamError::ExecutionTimeout { .. } => "execution_timeout",
        }
    }

    /// What the client's error summary says about this attempt.
    pub fn message(&self) -> String {
        match self {
            UpstreamError::Timeout { waiting_for, budget_ms: Some(ms) } => {
                format!("no {waiting_for} within {ms} ms")
            }
            UpstreamError::Timeout { waiting_for, budget_ms: None } => {
                format!("timed out waiting for {waiting_for}")
            }
            UpstreamError::ExecutionTimeout { budget_ms } => format!(
                "the upstream did not finish within the execution bound of {budget_ms} ms \
                 (requestQueue.executionMaxWaitMs)"
            ),
            UpstreamError::Connect(m)
            | UpstreamError::BrokenBeforeFirstByte(m)
            | UpstreamError::TokenEndpoint(m)
            | UpstreamError::TokenRejected(m)
            | UpstreamError::Local(m) => m.clone(),
        }
    }
}

/// The engine reads a rejected refresh as a 401 whose text says so. A fixed text:
/// the token endpoint's own answer may echo credentials, so it never reaches the
/// engine's `lastError`.
const TOKEN_REJECTED_BODY: &str = "token refresh rejected by the token endpoint";

fn os_error(e: &(dyn std::error::Error + 'static)) -> Option<i32> {
    // The first I/O error that carries an OS code (a wrapper may come first).
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(code) = s.downcast_ref::<std::io::Error>().and_then(std::io::Error::raw_os_error) {
            return Some(code);
        }
        source = s.source();
    }
    None
}

/// An error and its causes on one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_failures_are_never_held_against_the_upstream() {
        assert!(matches!(UpstreamError::Local("x".into()).outcome(), AttemptOutcome::Local));
        assert!(matches!(
            UpstreamError::TokenEndpoint("x".into()).outcome(),
            AttemptOutcome::Transport(TransportFailure::TokenEndpoint)
        ));
        assert!(matches!(
            UpstreamError::TokenRejected("x".into()).outcome(),
            AttemptOutcome::Http { status: 401, .. }
        ));
    }

    /// The proxied path reads bodies through reqwest: a body that times out after
    /// the headers came is a broken answer, not a connect timeout.
    #[tokio::test]
    async fn a_body_timing_out_through_reqwest_is_a_broken_answer() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let stalls = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
            let mut head = [0u8; 1024];
            let _ = socket.read(&mut head).await;
            let _ = socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial").await;
            // Holds the connection open with the body unfinished.
            let _ = socket.read(&mut head).await;
        });
        let response = reqwest::Client::new()
            .get(format!("http://{addr}/"))
            .timeout(std::time::Duration::from_millis(100))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // Read as the hop reads it: the response's body as an `http_body`.
        let body = http::Response::<reqwest::Body>::from(response).into_body();
        let failed = http_body_util::BodyExt::collect(body)
            .await
            .err()
            .unwrap_or_else(|| panic!("the body cannot finish"));
        assert!(failed.is_timeout() && failed.is_body(), "{failed:?}");
        let classified = UpstreamError::from_hop(&failed, false);
        assert!(matches!(classified, UpstreamError::BrokenBeforeFirstByte(_)), "{classified:?}");
        assert_eq!(classified.kind(), "stream_interrupted");
        stalls.abort();
    }

    #[test]
    fn out_of_file_descriptors_is_local() {
        let io = std::io::Error::from_raw_os_error(24);
        assert_eq!(os_error(&io), Some(24));
        assert!(LOCAL_OS_ERRORS.contains(&24));
    }
}
