//! Stable machine codes for every error the gateway produces itself.
//!
//! Each code has exactly one HTTP status ([`ErrorCode::http_status`]) and one wire
//! string (its serde name, also sent in the `x-switchyard-error` header). Clients and
//! scripts may match on these strings; changing one is a breaking change.

use serde::{Deserialize, Serialize};

/// A stable machine code for an error the gateway answers itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
pub enum ErrorCode {
    /// The request body is not valid JSON (or not a JSON object).
    #[serde(rename = "invalid_json")]
    InvalidJson,
    /// The request is well-formed JSON but misses or mistypes a required field.
    #[serde(rename = "invalid_request")]
    InvalidRequest,
    /// The request body exceeds the gateway's size limit.
    #[serde(rename = "body_too_large")]
    BodyTooLarge,
    /// No client API key, or one the gateway does not know.
    #[serde(rename = "authentication_error")]
    AuthenticationError,
    /// The management token is missing or wrong.
    #[serde(rename = "management_unauthorized")]
    ManagementUnauthorized,
    /// The Host header names neither a loopback host nor the configured listen host.
    #[serde(rename = "forbidden_host")]
    ForbiddenHost,
    /// The requested model matches no provider, combo, alias or catalogue entry.
    #[serde(rename = "model_not_found")]
    ModelNotFound,
    /// Targets were resolved but no connection could run them (all disabled, or
    /// excluded by the client key's allowed connections); no timer is involved.
    #[serde(rename = "no_executable_targets")]
    NoExecutableTargets,
    /// Every target is excluded by a resilience timer; retry after `Retry-After`.
    #[serde(rename = "all_targets_cooling_down")]
    AllTargetsCoolingDown,
    /// Every attempt failed upstream; the message names each attempt's outcome.
    #[serde(rename = "all_attempts_failed")]
    AllAttemptsFailed,
    /// Every attempt was rate limited upstream.
    #[serde(rename = "all_attempts_rate_limited")]
    AllAttemptsRateLimited,
    /// The upstream stream broke after bytes had reached the client.
    #[serde(rename = "upstream_stream_interrupted")]
    UpstreamStreamInterrupted,
    /// WebSocket transport is not offered; clients fall back to HTTP streaming.
    #[serde(rename = "websocket_unsupported")]
    WebsocketUnsupported,
    /// A management document failed validation; `issues` names every bad field.
    #[serde(rename = "validation_failed")]
    ValidationFailed,
    /// The addressed management resource does not exist.
    #[serde(rename = "not_found")]
    NotFound,
    /// The resource already exists (duplicate id or name).
    #[serde(rename = "conflict")]
    Conflict,
    /// A write named a version of the document (`If-Match`, `expectedVersion`) that
    /// is no longer the stored one: someone else changed it first.
    #[serde(rename = "precondition_failed")]
    PreconditionFailed,
    /// The gateway is shutting down and takes no new requests.
    #[serde(rename = "shutting_down")]
    ShuttingDown,
    /// An unexpected internal failure (database error and the like).
    #[serde(rename = "internal_error")]
    InternalError,
    /// The user paused routing (tray menu or `POST /api/gateway/pause`); inference
    /// requests are refused until it is resumed.
    #[serde(rename = "routing_paused")]
    RoutingPaused,
    /// The desktop app's gateway is not running (e.g. its port was taken), so a
    /// management command cannot reach it.
    #[serde(rename = "gateway_unavailable")]
    GatewayUnavailable,
    /// The Host header is missing (HTTP/1.1), repeated, or not visible ASCII.
    #[serde(rename = "invalid_host")]
    InvalidHost,
    /// A browser sent the request from a page that is not a loopback origin.
    #[serde(rename = "forbidden_origin")]
    ForbiddenOrigin,
    /// An inference request whose body is not declared as JSON.
    #[serde(rename = "unsupported_media_type")]
    UnsupportedMediaType,
    /// The route exists but not with this HTTP method.
    #[serde(rename = "method_not_allowed")]
    MethodNotAllowed,
    /// The request body did not arrive within the gateway's body-read timeout.
    #[serde(rename = "request_timeout")]
    RequestTimeout,
    /// The request queue of every candidate connection already holds
    /// `requestQueue.maxQueueDepth` waiting requests; refused before any other work.
    #[serde(rename = "RATE_LIMIT_QUEUE_FULL")]
    RateLimitQueueFull,
    /// The request waited in a connection's queue longer than its `maxWaitMs`;
    /// nothing was sent upstream.
    #[serde(rename = "RATE_LIMIT_QUEUE_TIMEOUT")]
    RateLimitQueueTimeout,
    /// The upstream did not finish within `executionMaxWaitMs` after dispatch.
    #[serde(rename = "RATE_LIMIT_EXECUTION_TIMEOUT")]
    RateLimitExecutionTimeout,
    /// A per-model gate stayed full for the whole queue-wait budget.
    #[serde(rename = "SEMAPHORE_TIMEOUT")]
    SemaphoreTimeout,
    /// Every candidate's gate is full and quota-share serialisation is off, so the
    /// request is refused instead of queued.
    #[serde(rename = "SEMAPHORE_QUEUE_FULL")]
    SemaphoreQueueFull,
    /// Every target of a combo is only briefly rate limited, but for longer than
    /// `comboCooldownWait` lets the request wait; retry after `Retry-After`.
    #[serde(rename = "combo_rate_limited")]
    ComboRateLimited,
    /// A lease call (or a managed inference request) lacks the lease owner header,
    /// or a managed inference request lacks the generation header.
    #[serde(rename = "lease-context-required")]
    LeaseContextRequired,
    /// The lease owner header is not `vlo_` + 43 base64url characters, or the
    /// generation header is not a positive integer.
    #[serde(rename = "lease-context-invalid")]
    LeaseContextInvalid,
    /// The client key may not hold exclusive leases: it needs the scope
    /// `lease:exclusive` and a non-empty `allowedConnections`.
    #[serde(rename = "lease-not-permitted")]
    LeaseNotPermitted,
    /// The owner, generation or key does not match an active lease (released,
    /// expired, moved on to a newer generation, or held through another key).
    #[serde(rename = "lease-fence-stale")]
    LeaseFenceStale,
    /// The owner already holds a lease through another key, or on a connection the
    /// requested model cannot use; release it first.
    #[serde(rename = "lease-owner-conflict")]
    LeaseOwnerConflict,
    /// Every free eligible connection is held by another owner's exclusive lease;
    /// state `waiting-for-capacity`, retry after `Retry-After`.
    #[serde(rename = "lease-capacity-unavailable")]
    LeaseCapacityUnavailable,
}

impl ErrorCode {
    /// Every code, for tables and snapshot tests.
    pub const ALL: [ErrorCode; 38] = [
        ErrorCode::InvalidJson,
        ErrorCode::InvalidRequest,
        ErrorCode::BodyTooLarge,
        ErrorCode::AuthenticationError,
        ErrorCode::ManagementUnauthorized,
        ErrorCode::ForbiddenHost,
        ErrorCode::ModelNotFound,
        ErrorCode::NoExecutableTargets,
        ErrorCode::AllTargetsCoolingDown,
        ErrorCode::AllAttemptsFailed,
        ErrorCode::AllAttemptsRateLimited,
        ErrorCode::UpstreamStreamInterrupted,
        ErrorCode::WebsocketUnsupported,
        ErrorCode::ValidationFailed,
        ErrorCode::NotFound,
        ErrorCode::Conflict,
        ErrorCode::PreconditionFailed,
        ErrorCode::ShuttingDown,
        ErrorCode::InternalError,
        ErrorCode::RoutingPaused,
        ErrorCode::GatewayUnavailable,
        ErrorCode::InvalidHost,
        ErrorCode::ForbiddenOrigin,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::MethodNotAllowed,
        ErrorCode::RequestTimeout,
        ErrorCode::RateLimitQueueFull,
        ErrorCode::RateLimitQueueTimeout,
        ErrorCode::RateLimitExecutionTimeout,
        ErrorCode::SemaphoreTimeout,
        ErrorCode::SemaphoreQueueFull,
        ErrorCode::ComboRateLimited,
        ErrorCode::LeaseContextRequired,
        ErrorCode::LeaseContextInvalid,
        ErrorCode::LeaseNotPermitted,
        ErrorCode::LeaseFenceStale,
        ErrorCode::LeaseOwnerConflict,
        ErrorCode::LeaseCapacityUnavailable,
    ];

    /// The HTTP status this code is always answered with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidJson
            | ErrorCode::InvalidRequest
            | ErrorCode::ValidationFailed
            | ErrorCode::InvalidHost
            | ErrorCode::LeaseContextRequired
            | ErrorCode::LeaseContextInvalid => 400,
            ErrorCode::AuthenticationError | ErrorCode::ManagementUnauthorized => 401,
            ErrorCode::ForbiddenHost | ErrorCode::ForbiddenOrigin | ErrorCode::LeaseNotPermitted => 403,
            ErrorCode::ModelNotFound | ErrorCode::NoExecutableTargets | ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::RequestTimeout => 408,
            ErrorCode::Conflict | ErrorCode::LeaseFenceStale | ErrorCode::LeaseOwnerConflict => 409,
            ErrorCode::PreconditionFailed => 412,
            ErrorCode::BodyTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::WebsocketUnsupported => 426,
            ErrorCode::AllAttemptsRateLimited
            | ErrorCode::RateLimitQueueFull
            | ErrorCode::SemaphoreQueueFull
            | ErrorCode::SemaphoreTimeout
            | ErrorCode::ComboRateLimited
            | ErrorCode::LeaseCapacityUnavailable => 429,
            ErrorCode::InternalError => 500,
            ErrorCode::AllAttemptsFailed | ErrorCode::UpstreamStreamInterrupted => 502,
            ErrorCode::AllTargetsCoolingDown
            | ErrorCode::ShuttingDown
            | ErrorCode::RoutingPaused
            | ErrorCode::GatewayUnavailable
            | ErrorCode::RateLimitQueueTimeout => 503,
            ErrorCode::RateLimitExecutionTimeout => 504,
        }
    }

    /// The wire string (the serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::BodyTooLarge => "body_too_large",
            ErrorCode::AuthenticationError => "authentication_error",
            ErrorCode::ManagementUnauthorized => "management_unauthorized",
            ErrorCode::ForbiddenHost => "forbidden_host",
            ErrorCode::ModelNotFound => "model_not_found",
            ErrorCode::NoExecutableTargets => "no_executable_targets",
            ErrorCode::AllTargetsCoolingDown => "all_targets_cooling_down",
            ErrorCode::AllAttemptsFailed => "all_attempts_failed",
            ErrorCode::AllAttemptsRateLimited => "all_attempts_rate_limited",
            ErrorCode::UpstreamStreamInterrupted => "upstream_stream_interrupted",
            ErrorCode::WebsocketUnsupported => "websocket_unsupported",
            ErrorCode::ValidationFailed => "validation_failed",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Conflict => "conflict",
            ErrorCode::PreconditionFailed => "precondition_failed",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::InternalError => "internal_error",
            ErrorCode::RoutingPaused => "routing_paused",
            ErrorCode::GatewayUnavailable => "gateway_unavailable",
            ErrorCode::InvalidHost => "invalid_host",
            ErrorCode::ForbiddenOrigin => "forbidden_origin",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::RateLimitQueueFull => "RATE_LIMIT_QUEUE_FULL",
            ErrorCode::RateLimitQueueTimeout => "RATE_LIMIT_QUEUE_TIMEOUT",
            ErrorCode::RateLimitExecutionTimeout => "RATE_LIMIT_EXECUTION_TIMEOUT",
            ErrorCode::SemaphoreTimeout => "SEMAPHORE_TIMEOUT",
            ErrorCode::SemaphoreQueueFull => "SEMAPHORE_QUEUE_FULL",
            ErrorCode::ComboRateLimited => "combo_rate_limited",
            ErrorCode::LeaseContextRequired => "lease-context-required",
            ErrorCode::LeaseContextInvalid => "lease-context-invalid",
            ErrorCode::LeaseNotPermitted => "lease-not-permitted",
            ErrorCode::LeaseFenceStale => "lease-fence-stale",
            ErrorCode::LeaseOwnerConflict => "lease-owner-conflict",
            ErrorCode::LeaseCapacityUnavailable => "lease-capacity-unavailable",
        }
    }

    /// The `error.type` a client of the Anthropic format expects for this status.
    pub fn anthropic_type(self) -> &'static str {
        match self.http_status() {
            400 | 405 | 408 | 409 | 412 | 415 | 426 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            503 => "overloaded_error",
            _ => "api_error",
        }
    }

    /// The `error.type` a client of the OpenAI formats expects for this status.
    pub fn openai_type(self) -> &'static str {
        match self.http_status() {
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            400 | 405 | 408 | 409 | 412 | 413 | 415 | 426 => "invalid_request_error",
            _ => "server_error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_string_equals_serde_name_for_every_code() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_string(&code).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    #[test]
    fn status_table_is_pinned() {
        let table: Vec<String> =
            ErrorCode::ALL.iter().map(|c| format!("{} {}", c.http_status(), c.as_str())).collect();
        assert_eq!(
            table,
            [
                "400 invalid_json",
                "400 invalid_request",
                "413 body_too_large",
                "401 authentication_error",
                "401 management_unauthorized",
                "403 forbidden_host",
                "404 model_not_found",
                "404 no_executable_targets",
                "503 all_targets_cooling_down",
                "502 all_attempts_failed",
                "429 all_attempts_rate_limited",
                "502 upstream_stream_interrupted",
                "426 websocket_unsupported",
                "400 validation_failed",
                "404 not_found",
                "409 conflict",
                "412 precondition_failed",
                "503 shutting_down",
                "500 internal_error",
                "503 routing_paused",
                "503 gateway_unavailable",
                "400 invalid_host",
                "403 forbidden_origin",
                "415 unsupported_media_type",
                "405 method_not_allowed",
                "408 request_timeout",
                "429 RATE_LIMIT_QUEUE_FULL",
                "503 RATE_LIMIT_QUEUE_TIMEOUT",
                "504 RATE_LIMIT_EXECUTION_TIMEOUT",
                "429 SEMAPHORE_TIMEOUT",
                "429 SEMAPHORE_QUEUE_FULL",
                "429 combo_rate_limited",
                "400 lease-context-required",
                "400 lease-context-invalid",
                "403 lease-not-permitted",
                "409 lease-fence-stale",
                "409 lease-owner-conflict",
                "429 lease-capacity-unavailable",
            ]
        );
    }
}
