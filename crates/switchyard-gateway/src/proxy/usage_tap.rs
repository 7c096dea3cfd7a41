//! Token counts for the request log, read from what the relay passes anyway: the
//! usage events of a stream (parsed only when an event's data names `"usage"`) and
//! the `usage` object of a complete JSON answer (found from the end of the body, and
//! only that object parsed). Counts keep Anthropic's meaning (input without cached
//! tokens); OpenAI's are converted ([`switchyard_translate::usage_in`]).

use std::sync::LazyLock;

use bytes::Bytes;
use memchr::memmem::{Finder, FinderRev};
use serde_json::Value;
use switchyard_translate::Format;
use switchyard_translate::ir::Usage;
use switchyard_types::api::TokenUsageView;

/// The most of a JSON answer's end kept to find its `usage` (usage sits at the end
/// of all three formats' answers).
const JSON_TAIL_BYTES: usize = 64 * 1024;

/// Collects the usage an answer reports.
#[derive(Debug)]
pub struct UsageTap {
    format: Format,
    usage: Option<Usage>,
    /// The last chunk of a plain JSON body (a shared buffer, not a copy)...
    last: Option<Bytes>,
    /// ...and the ones before it, only for bodies of several chunks.
    earlier: Vec<Bytes>,
    tail_len: usize,
    /// A stream's usage events not read yet: read when the next chunk arrives or
    /// at the end, not on the way to the client's write (the first chunk's
    /// `message_start` carries usage, and reading it delayed the first byte).
    unread: Vec<String>,
}

/// Every usage field of the three formats, read without building a document tree
/// (unknown fields are skipped).
#[derive(Debug, Default, serde::Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<Cached>,
    #[serde(default)]
    input_tokens_details: Option<Cached>,
}

#[derive(Debug, Default, serde::Deserialize)]
struct Cached {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl RawUsage {
    /// In the canonical meaning (input without cached tokens).
    fn canonical(&self, format: Format) -> Usage {
        let cached = |d: &Option<Cached>| d.as_ref().and_then(|d| d.cached_tokens).unwrap_or(0);
        match format {
            Format::Messages => Usage {
                input: self.input_tokens,
                output: self.output_tokens,
                cache_read: self.cache_read_input_tokens,
                cache_write: self.cache_creation_input_tokens,
                reasoning: 0,
            },
            Format::Chat => Usage {
                input: self.prompt_tokens.saturating_sub(cached(&self.prompt_tokens_details)),
                output: self.completion_tokens,
                cache_read: cached(&self.prompt_tokens_details),
                ..Usage::default()
            },
            Format::Responses => Usage {
                input: self.input_tokens.saturating_sub(cached(&self.input_tokens_details)),
                output: self.output_tokens,
                cache_read: cached(&self.input_tokens_details),
                ..Usage::default()
            },
        }
    }
}

/// `"usage"`, searched for in every event and from the end of a plain body
/// (searchers built once, see `sse.rs`).
static USAGE_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage\""));
static USAGE_KEY_REV: LazyLock<FinderRev<'static>> = LazyLock::new(|| FinderRev::new(b"\"usage\""));

impl UsageTap {
    /// A tap for answers in `format`.
    pub fn new(format: Format) -> UsageTap {
        UsageTap { format, usage: None, last: None, earlier: Vec::new(), tail_len: 0, unread: Vec::new() }
    }

    /// One SSE event's data: kept, when it names usage, until [`Self::catch_up`].
    pub fn event(&mut self, data: String) {
        if USAGE_KEY.find(data.as_bytes()).is_some() {
            self.unread.push(data);
        }
    }

    /// Reads the usage events kept so far, in order.
    pub fn catch_up(&mut self) {
        for data in std::mem::take(&mut self.unread) {
            if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
                self.note(&v);
            }
        }
    }

    /// A chunk of a plain JSON body (kept, bounded, until [`Self::finish_body`]).
    pub fn body_chunk(&mut self, chunk: &Bytes) {
        if let Some(previous) = self.last.replace(chunk.clone()) {
            self.earlier.push(previous);
        }
        self.tail_len += chunk.len();
        while self.tail_len > JSON_TAIL_BYTES && !self.earlier.is_empty() {
            let dropped = self.earlier.remove(0);
            self.tail_len -= dropped.len();
        }
    }

    /// Reads the usage of the plain body seen so far.
    pub fn finish_body(&mut self) {
        let Some(last) = self.last.take() else { return };
        let joined: Bytes = if self.earlier.is_empty() {
            last
        } else {
            let mut all = std::mem::take(&mut self.earlier);
            all.push(last);
            all.concat().into()
        };
        let Some(at) = USAGE_KEY_REV.rfind(&joined) else { return };
        let rest = &joined[at + b"\"usage\"".len()..];
        let Some(colon) = rest.iter().position(|b| *b == b':') else { return };
        let mut values = serde_json::Deserializer::from_slice(&rest[colon + 1..]).into_iter::<RawUsage>();
        if let Some(Ok(raw)) = values.next() {
            let u = raw.canonical(self.format);
            self.usage.get_or_insert_with(Usage::default).merge(&u);
        }
    }

    fn note(&mut self, v: &Value) {
        if let Some(u) = switchyard_translate::usage_in(self.format, v) {
            self.usage.get_or_insert_with(Usage::default).merge(&u);
        }
    }

    /// What the answer reported, if anything.
    pub fn view(&mut self) -> Option<TokenUsageView> {
        self.catch_up();
        let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        self.usage.map(|u| TokenUsageView {
            input: clamp(u.input),
            output: clamp(u.output),
            cache_read: clamp(u.cache_read),
            cache_write: clamp(u.cache_write),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_and_bodies_of_every_format_give_their_usage() {
        let mut t = UsageTap::new(Format::Messages);
        t.event(r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}"#.to_owned());
        t.event(r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"hi"}}"#.to_owned());
        t.event(r#"{"type":"message_delta","usage":{"output_tokens":42}}"#.to_owned());
        assert_eq!(t.view(), Some(TokenUsageView { input: 10, output: 42, cache_read: 90, cache_write: 0 }));

        let mut t = UsageTap::new(Format::Chat);
        t.body_chunk(&Bytes::from_static(
            br#"{"id":"c","choices":[{"message":{"content":"the \"usage\" word"}}],"#,
        ));
        t.body_chunk(&Bytes::from_static(br#""usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":60}}}"#));
        t.finish_body();
        assert_eq!(t.view(), Some(TokenUsageView { input: 40, output: 5, cache_read: 60, cache_write: 0 }));

        let mut t = UsageTap::new(Format::Responses);
        t.event(r#"{"type":"response.completed","response":{"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":10},"output_tokens":7}}}"#.to_owned());
        assert_eq!(t.view(), Some(TokenUsageView { input: 20, output: 7, cache_read: 10, cache_write: 0 }));

        let mut t = UsageTap::new(Format::Chat);
        t.body_chunk(&Bytes::from_static(b"{\"error\":{}}"));
        t.finish_body();
        assert_eq!(t.view(), None);
    }
}
