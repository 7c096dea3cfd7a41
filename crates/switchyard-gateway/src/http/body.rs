//! Reading a whole request body under a size limit, with the gateway's own errors
//! for every route: `413 body_too_large` over the limit (refused before reading
//! when `Content-Length` already says so), `408 request_timeout` when the
//! connection's body-read timeout fires, `400 invalid_request` when the client
//! breaks off.

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, header};
use http_body_util::LengthLimitError;
use switchyard_types::ErrorCode;

use crate::conn::{BodyReadTimeout, find_cause};
use crate::errors::GatewayError;

/// The `413` for a body over `limit` bytes.
fn too_large(limit: usize) -> GatewayError {
    GatewayError::new(
        ErrorCode::BodyTooLarge,
        format!("request body exceeds this route's limit of {limit} bytes"),
    )
}

/// Reads `body` in full, refusing anything over `limit` bytes.
pub async fn read_whole(body: Body, headers: &HeaderMap, limit: usize) -> Result<Bytes, GatewayError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > u64::try_from(limit).unwrap_or(u64::MAX)) {
        return Err(too_large(limit));
    }
    let err = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => return Ok(bytes),
        Err(e) => e.into_inner(),
    };
    if find_cause::<LengthLimitError>(err.as_ref()).is_some() {
        return Err(too_large(limit));
    }
    if let Some(timeout) = find_cause::<BodyReadTimeout>(err.as_ref()) {
        return Err(GatewayError::new(ErrorCode::RequestTimeout, timeout.to_string()));
    }
    Err(GatewayError::new(ErrorCode::InvalidRequest, format!("could not read the request body: {err}")))
}
