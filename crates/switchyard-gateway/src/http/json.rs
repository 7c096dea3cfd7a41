//! Request bodies of the management API: one size limit for every route, read
//! through [`super::body::read_whole`] (so 413 and 408 are the gateway's JSON), and
//! parsed with the failing field's path so a bad document gets a 400 naming it.
//! Documents must be JSON objects ([`crate::errors::require_object`]).

use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::body::read_whole;
use crate::errors::{ErrorFormat, GatewayError, require_object};

/// Largest management document accepted, on every route.
pub const LIMIT: usize = 1024 * 1024;

/// A management JSON body.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = Response;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        let bytes =
            read_whole(body, &parts.headers, LIMIT).await.map_err(|e| e.render(ErrorFormat::Management))?;
        parse(&bytes).map(ApiJson).map_err(|e| e.render(ErrorFormat::Management))
    }
}

/// A management body read raw (for routes with their own parser): empty, or a
/// JSON object, within the same limit.
pub struct ApiBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiBody {
    type Rejection = Response;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        let bytes =
            read_whole(body, &parts.headers, LIMIT).await.map_err(|e| e.render(ErrorFormat::Management))?;
        if !bytes.iter().all(u8::is_ascii_whitespace) {
            require_object(&bytes).map_err(|e| e.render(ErrorFormat::Management))?;
        }
        Ok(ApiBody(bytes))
    }
}

/// Parses `bytes` as `T`, reporting the JSON pointer of the first bad field.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, GatewayError> {
    crate::errors::parse_document(bytes)
}

impl<T> IntoResponse for ApiJson<T>
where
    T: serde::Serialize,
{
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}
