//! Test doubles for Switchyard, written for its tests and benchmarks only.
//!
//! [`FakeUpstream`] is a scriptable HTTP server on 127.0.0.1 standing in for a
//! provider: it answers with scripted statuses, headers, JSON bodies or SSE frames
//! (with delays, mid-stream resets and stalls), records every request it receives,
//! and notices when a client abandons a stream. [`wire`] builds realistic bodies in
//! the Anthropic, Chat Completions and Responses formats.

mod fake_upstream;
pub mod postgres;
pub mod scenario;
pub mod wire;

pub use fake_upstream::{FakeUpstream, Hold, LiveFeed, LiveStream, RecordedRequest, Reply, StreamEnd};
