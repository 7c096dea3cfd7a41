//! Errors the gateway answers itself, and their one renderer at the edge.
//!
//! Every such response carries a stable [`ErrorCode`], a message naming the cause,
//! `x-switchyard-error: <code>`, `Retry-After` when a retry time is known, and a body
//! in the client's own wire format: Anthropic `{"type":"error","error":{...}}` on
//! `/v1/messages`, OpenAI `{"error":{...}}` on the OpenAI endpoints, and the
//! management document `{"error":{code,message,issues}}` on `/api`.

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::json;
use switchyard_types::api::{ManagementError, ValidationIssue};
use switchyard_types::{ClientFormat, ErrorCode};

/// Response header naming the gateway's own error code.
pub const ERROR_HEADER: &str = "x-switchyard-error";

/// An error answered by the gateway itself.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayError {
    /// Stable machine code; decides the HTTP status.
    pub code: ErrorCode,
    /// Human explanation naming the cause.
    pub message: String,
    /// Seconds until a retry makes sense, when known.
    pub retry_after_secs: Option<u64>,
    /// Field-level problems (management validation).
    pub issues: Vec<ValidationIssue>,
    /// Top-level members beside the envelope: `diagnostics` (excluded targets of
    /// a 503/404), a lease refusal's `state` and `retryAfter`.
    pub fields: Vec<(&'static str, serde_json::Value)>,
}

impl GatewayError {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> GatewayError {
        GatewayError {
            code,
            message: message.into(),
            retry_after_secs: None,
            issues: Vec::new(),
            fields: Vec::new(),
        }
    }

    /// Adds a top-level member to the body.
    pub fn with_field(mut self, name: &'static str, value: serde_json::Value) -> GatewayError {
        self.fields.push((name, value));
        self
    }

    /// Adds a retry hint.
    pub fn with_retry_after(mut self, secs: Option<u64>) -> GatewayError {
        self.retry_after_secs = secs;
        self
    }

    /// Adds a top-level `diagnostics` object to the body.
    pub fn with_diagnostics(self, diagnostics: serde_json::Value) -> GatewayError {
        self.with_field("diagnostics", diagnostics)
    }

    /// A validation failure listing every bad field.
    pub fn validation(issues: Vec<ValidationIssue>) -> GatewayError {
        let message = issues
            .iter()
            .map(|i| if i.path.is_empty() { i.message.clone() } else { format!("{}: {}", i.path, i.message) })
            .collect::<Vec<_>>()
            .join("; ");
        GatewayError {
            code: ErrorCode::ValidationFailed,
            message: format!("invalid document: {message}"),
            retry_after_secs: None,
            issues,
            fields: Vec::new(),
        }
    }

    /// An internal failure; the detail is logged, not returned.
    pub fn internal(detail: impl std::fmt::Display) -> GatewayError {
        tracing::error!(event = "internal_error", %detail);
        GatewayError::new(ErrorCode::InternalError, "internal error; see the gateway log")
    }

    fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The JSON body in the given client format.
    pub fn body(&self, format: ErrorFormat) -> serde_json::Value {
        let mut body = self.envelope(format);
        if let Some(map) = body.as_object_mut() {
            for (name, value) in &self.fields {
                map.insert((*name).to_owned(), value.clone());
            }
        }
        body
    }

    fn envelope(&self, format: ErrorFormat) -> serde_json::Value {
        match format {
            ErrorFormat::Client(ClientFormat::AnthropicMessages) => json!({
                "type": "error",
                "error": {
                    "type": self.code.anthropic_type(),
                    "message": self.message,
                    "code": self.code.as_str(),
                }
            }),
            ErrorFormat::Client(_) => json!({
                "error": {
                    "message": self.message,
                    "type": self.code.openai_type(),
                    "param": null,
                    "code": self.code.as_str(),
                }
            }),
            ErrorFormat::Management => json!({
                "error": ManagementError {
                    code: self.code,
                    message: self.message.clone(),
                    issues: self.issues.clone(),
                }
            }),
        }
    }

    /// Renders the full response in the given format.
    pub fn render(&self, format: ErrorFormat) -> Response {
        let body = Bytes::from(self.body(format).to_string());
        let mut response = (self.status(), body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ERROR_HEADER, HeaderValue::from_static(self.code.as_str()));
        if let Some(secs) = self.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// Management documents are JSON objects. serde would also read a struct from an
/// array (`[true]` as `{"paused": true}`), so anything else is refused as
/// `validation_failed` naming what it is; text that is not JSON is `invalid_json`.
pub fn require_object(bytes: &[u8]) -> Result<(), GatewayError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        return Ok(());
    }
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        return Err(GatewayError::new(ErrorCode::InvalidJson, format!("body is not valid JSON: {e}")));
    }
    let kind = match first {
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    };
    Err(GatewayError::validation(vec![ValidationIssue {
        path: String::new(),
        message: format!("the document must be a JSON object, not {kind}"),
    }]))
}

/// Parses a management document (REST body or IPC argument), which must be a JSON
/// object, reporting the JSON pointer of the first bad field as a validation issue.
pub fn parse_document<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, GatewayError> {
    require_object(bytes)?;
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            return GatewayError::new(ErrorCode::InvalidJson, format!("body is not valid JSON: {inner}"));
        }
        let pointer = if path == "." { String::new() } else { format!("/{}", path.replace('.', "/")) };
        GatewayError::validation(vec![ValidationIssue { path: pointer, message: inner.to_string() }])
    })
}

/// Which envelope an error is rendered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorFormat {
    /// A client inference endpoint's own format.
    Client(ClientFormat),
    /// The management API's document.
    Management,
}

impl ErrorFormat {
    /// The format implied by a request path, for errors raised before routing.
    pub fn for_path(path: &str) -> ErrorFormat {
        if path.starts_with("/v1/messages") {
            ErrorFormat::Client(ClientFormat::AnthropicMessages)
        } else if path.starts_with("/v1/responses") {
            ErrorFormat::Client(ClientFormat::OpenaiResponses)
        } else if path.starts_with("/v1/") {
            ErrorFormat::Client(ClientFormat::OpenaiChat)
        } else {
            ErrorFormat::Management
        }
    }
}

/// A `GatewayError` bound to the format it must be rendered in, so handlers can
/// return it with `?`.
#[derive(Debug)]
pub struct Rendered(pub GatewayError, pub ErrorFormat);

impl IntoResponse for Rendered {
    fn into_response(self) -> Response {
        self.0.render(self.1)
    }
}

/// The SSE event that ends a client stream whose upstream broke mid-way, in the
/// client's format. Always a complete frame.
pub fn stream_error_frame(format: ClientFormat, message: &str) -> Bytes {
    let code = ErrorCode::UpstreamStreamInterrupted;
    let frame = match format {
        ClientFormat::AnthropicMessages => format!(
            "event: error\ndata: {}\n\n",
            json!({"type": "error", "error": {"type": "api_error", "message": message}})
        ),
        ClientFormat::OpenaiChat => format!(
            "data: {}\n\n",
            json!({"error": {"message": message, "type": "server_error", "param": null, "code": code.as_str()}})
        ),
        ClientFormat::OpenaiResponses => format!(
            "event: error\ndata: {}\n\n",
            json!({"type": "error", "code": code.as_str(), "message": message, "param": null})
        ),
    };
    Bytes::from(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_envelope() {
        let e = GatewayError::new(ErrorCode::AuthenticationError, "no key");
        let body = e.body(ErrorFormat::Client(ClientFormat::AnthropicMessages));
        assert_eq!(
            body,
            json!({"type":"error","error":{"type":"authentication_error","message":"no key","code":"authentication_error"}})
        );
    }

    #[test]
    fn openai_envelope() {
        let e = GatewayError::new(ErrorCode::ModelNotFound, "nope");
        let body = e.body(ErrorFormat::Client(ClientFormat::OpenaiChat));
        assert_eq!(
            body,
            json!({"error":{"message":"nope","type":"not_found_error","param":null,"code":"model_not_found"}})
        );
    }

    #[test]
    fn documents_must_be_objects() {
        #[derive(serde::Deserialize, Debug)]
        #[expect(dead_code, reason = "only the parse result matters")]
        struct Pause {
            paused: bool,
        }
        assert!(parse_document::<Pause>(b" {\"paused\": true}").is_ok());
        for (body, kind) in [
            ("[true]", "an array"),
            ("\"x\"", "a string"),
            ("true", "a boolean"),
            ("null", "null"),
            ("1", "a number"),
        ] {
            let e =
                parse_document::<Pause>(body.as_bytes()).err().unwrap_or_else(|| panic!("{body} accepted"));
            assert_eq!(e.code, ErrorCode::ValidationFailed, "{body}");
            assert_eq!(
                e.message,
                format!("invalid document: the document must be a JSON object, not {kind}")
            );
            assert_eq!(e.issues.first().map(|i| i.path.as_str()), Some(""));
        }
        assert_eq!(parse_document::<Pause>(b"[tru").err().map(|e| e.code), Some(ErrorCode::InvalidJson));
    }

    #[test]
    fn stream_error_frames_are_complete_events() {
        for f in [ClientFormat::AnthropicMessages, ClientFormat::OpenaiChat, ClientFormat::OpenaiResponses] {
            let frame = stream_error_frame(f, "upstream reset");
            let text = std::str::from_utf8(&frame).unwrap_or_default();
            assert!(text.ends_with("\n\n"));
            let data = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or_default();
            assert!(serde_json::from_str::<serde_json::Value>(data).is_ok());
        }
    }
}
