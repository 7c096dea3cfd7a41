//! Writing SSE frames.

use bytes::{BufMut, BytesMut};
use serde_json::Value;

/// `event: NAME\ndata: JSON\n\n` (Messages and Responses).
pub fn named(out: &mut BytesMut, name: &str, data: &Value) {
    out.put_slice(b"event: ");
    out.put_slice(name.as_bytes());
    out.put_slice(b"\ndata: ");
    out.put_slice(data.to_string().as_bytes());
    out.put_slice(b"\n\n");
}

/// `data: JSON\n\n` (Chat).
pub fn data(out: &mut BytesMut, data: &Value) {
    out.put_slice(b"data: ");
    out.put_slice(data.to_string().as_bytes());
    out.put_slice(b"\n\n");
}

/// Chat's terminator.
pub fn done(out: &mut BytesMut) {
    out.put_slice(b"data: [DONE]\n\n");
}
