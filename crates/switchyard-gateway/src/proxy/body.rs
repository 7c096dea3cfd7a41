//! The client's request body: validated as strict JSON once (`strict_json`), its
//! top-level `model` read without building a document tree, and the model id spliced in place
//! for each upstream so every other byte (unknown fields, roles, key order) passes
//! through untouched.

use std::ops::Range;
use std::sync::OnceLock;

use bytes::{Bytes, BytesMut};
use switchyard_types::ErrorCode;

use super::strict_json::probe;
use crate::errors::GatewayError;

/// A validated client body.
#[derive(Debug, Clone)]
pub struct ClientBody {
    bytes: Bytes,
    model: String,
    model_span: Range<usize>,
    streaming: bool,
    /// The document tree, built only when a translated attempt needs it.
    tree: OnceLock<serde_json::Value>,
}

impl ClientBody {
    /// Validates `bytes` as a JSON object with a string `model` ([`probe`]: strict
    /// UTF-8, finite numbers, bounded nesting). How a response is relayed is decided
    /// by the upstream's content type; `stream` only picks the readiness budget.
    pub fn parse(bytes: Bytes) -> Result<ClientBody, GatewayError> {
        let trimmed = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if trimmed != Some(&b'{') {
            return Err(GatewayError::new(ErrorCode::InvalidJson, "request body must be a JSON object"));
        }
        let fields = probe(&bytes).map_err(|e| {
            GatewayError::new(ErrorCode::InvalidJson, format!("request body is not valid JSON: {e}"))
        })?;
        let Some(raw_model) = fields.model else {
            return Err(GatewayError::new(
                ErrorCode::InvalidRequest,
                "request body has no 'model' field; name a model, combo or alias",
            ));
        };
        let model: String = serde_json::from_str(raw_model.get())
            .map_err(|_| GatewayError::new(ErrorCode::InvalidRequest, "'model' must be a string"))?;
        if model.is_empty() {
            return Err(GatewayError::new(ErrorCode::InvalidRequest, "'model' must not be empty"));
        }
        // The raw value borrows from `bytes`, so its offset locates it in the body.
        let start = (raw_model.get().as_ptr() as usize).saturating_sub(bytes.as_ptr() as usize);
        let model_span = start..start + raw_model.get().len();
        let streaming = fields.stream.unwrap_or(false);
        Ok(ClientBody { bytes, model, model_span, streaming, tree: OnceLock::new() })
    }

    /// Whether the client asked for a streamed answer (`"stream": true`).
    pub fn streaming(&self) -> bool {
        self.streaming
    }

    /// The body as the client sent it.
    pub fn raw(&self) -> &[u8] {
        &self.bytes
    }

    /// The body as a document tree (parsed once, on first use: same-format
    /// requests never build it).
    pub fn tree(&self) -> &serde_json::Value {
        self.tree.get_or_init(|| serde_json::from_slice(&self.bytes).unwrap_or_default())
    }

    /// The model name the client sent.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The body to send upstream with `model` as the model id. Shares the client's
    /// buffer when the id is unchanged; otherwise copies once around the splice.
    pub fn with_model(&self, model: &str) -> Bytes {
        if model == self.model {
            return self.bytes.clone();
        }
        let encoded = serde_json::Value::String(model.to_owned()).to_string();
        let mut out = BytesMut::with_capacity(self.bytes.len() + encoded.len());
        out.extend_from_slice(&self.bytes[..self.model_span.start]);
        out.extend_from_slice(encoded.as_bytes());
        out.extend_from_slice(&self.bytes[self.model_span.end..]);
        out.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<ClientBody, GatewayError> {
        ClientBody::parse(Bytes::from(s.to_owned()))
    }

    #[test]
    fn splices_model_and_keeps_everything_else() {
        let src = r#"{"messages":[{"role":"system","content":"x"}],"model" : "anthropic/claude-x","z":{"model":"inner"},"stream":true}"#;
        let body = parse(src).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(body.model(), "anthropic/claude-x");
        let out = body.with_model("claude-x");
        assert_eq!(
            std::str::from_utf8(&out).unwrap_or_default(),
            r#"{"messages":[{"role":"system","content":"x"}],"model" : "claude-x","z":{"model":"inner"},"stream":true}"#
        );
    }

    #[test]
    fn unchanged_model_shares_the_buffer() {
        let body = parse(r#"{"model":"gpt-5"}"#).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(body.with_model("gpt-5").as_ptr(), body.bytes.as_ptr());
    }

    #[test]
    fn escapes_are_decoded_and_encoded() {
        let body = parse(r#"{"model":"a\/b"}"#).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(body.model(), "a/b");
        assert_eq!(&body.with_model("q\"x")[..], br#"{"model":"q\"x"}"#);
    }

    #[test]
    fn rejects_bad_bodies_with_named_causes() {
        assert_eq!(parse("{\"model\":").err().map(|e| e.code), Some(ErrorCode::InvalidJson));
        assert_eq!(parse("[1]").err().map(|e| e.code), Some(ErrorCode::InvalidJson));
        assert_eq!(parse("{}").err().map(|e| e.code), Some(ErrorCode::InvalidRequest));
        assert_eq!(parse("{\"model\":3}").err().map(|e| e.code), Some(ErrorCode::InvalidRequest));
        assert_eq!(parse(r#"{"model":"a","model":"b"}"#).err().map(|e| e.code), Some(ErrorCode::InvalidJson));
    }
}
