//! JSON request bodies of the management API, parsed with the failing field's path
//! so a bad document gets a 400 naming it, in the management error format.

use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use switchyard_types::ErrorCode;

use crate::errors::{ErrorFormat, GatewayError};

/// Largest management document accepted.
const LIMIT: usize = 1024 * 1024;

/// A management JSON body.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = Response;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::to_bytes(req.into_body(), LIMIT).await.map_err(|_| {
            GatewayError::new(ErrorCode::BodyTooLarge, format!("document exceeds {LIMIT} bytes"))
                .render(ErrorFormat::Management)
        })?;
        parse(&bytes).map(ApiJson).map_err(|e| e.render(ErrorFormat::Management))
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
