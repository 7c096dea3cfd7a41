//! The gateway's side of format translation ([`switchyard_translate`] does the
//! work, purely): which attempts translate, the upstream body and endpoint, and the
//! answer's way back (stream translator, complete answer, error envelope).
//!
//! A connection that speaks the client's format never comes here: its request and
//! answer are relayed byte for byte (`cache_control`, unknown fields and thinking
//! signatures untouched).

use bytes::Bytes;
use switchyard_translate::{Format, RequestOptions, StreamContext, StreamTranslator};
use switchyard_types::{ApiFormat, AuthKind, ClientFormat};

use super::forward::ForwardRequest;
use crate::affinity::session_of;
use crate::routing::{Candidate, UpstreamEndpoint};

/// `max_tokens` sent to an Anthropic upstream when the client named none (Anthropic
/// requires one; Chat and Responses clients often leave it out).
pub const DEFAULT_MAX_TOKENS: u64 = 8_192;

/// An attempt that crosses formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Translation {
    /// What the upstream speaks for this request.
    pub upstream: ClientFormat,
    /// What the client speaks.
    pub client: ClientFormat,
}

/// The translation crate's name for a wire format.
pub fn format_of(f: ClientFormat) -> Format {
    match f {
        ClientFormat::AnthropicMessages => Format::Messages,
        ClientFormat::OpenaiChat => Format::Chat,
        ClientFormat::OpenaiResponses => Format::Responses,
    }
}

impl Translation {
    /// The translation an attempt of `req` on `candidate` needs, if any.
    pub fn for_attempt(req: &ForwardRequest, candidate: &Candidate) -> Option<Translation> {
        let upstream = candidate.connection.api_format.wire_for(req.format);
        (upstream != req.format).then_some(Translation { upstream, client: req.format })
    }

    /// The upstream endpoint.
    pub fn endpoint(self) -> UpstreamEndpoint {
        match self.upstream {
            ClientFormat::AnthropicMessages => UpstreamEndpoint::Messages,
            ClientFormat::OpenaiChat => UpstreamEndpoint::ChatCompletions,
            ClientFormat::OpenaiResponses => UpstreamEndpoint::Responses,
        }
    }

    /// The upstream body for `candidate`. The client's body was checked to
    /// translate before routing ([`check`]), so an error here is the gateway's own.
    pub fn request_body(self, req: &ForwardRequest, candidate: &Candidate) -> Result<Bytes, String> {
        // OpenAI itself, not any server of the `openai` format (an OpenAI-compatible
        // one would not know the modern fields).
        let conn = &candidate.connection;
        let native_openai = conn.api_format == ApiFormat::Openai && &*conn.provider == "openai";
        // A session's stable key lets OpenAI route its turns to a warm prompt cache.
        let cache_key = (native_openai || self.upstream == ClientFormat::OpenaiResponses)
            .then(|| {
                req.session.clone().or_else(|| {
                    session_of(&req.headers, req.body.raw()).map(|s| s.scoped_to(req.api_key_id.as_deref()))
                })
            })
            .flatten()
            .map(|s| format!("switchyard-{}", s.as_str()));
        let opts = RequestOptions {
            model: candidate.model.to_string(),
            prompt_cache_key: cache_key,
            default_max_tokens: DEFAULT_MAX_TOKENS,
            chat_stream_usage: true,
            openai_native: native_openai,
            anthropic_oauth: conn.api_format == ApiFormat::Anthropic && conn.auth_kind == AuthKind::Oauth,
        };
        let body = switchyard_translate::translate_request(
            format_of(self.client),
            format_of(self.upstream),
            req.body.tree(),
            &opts,
        )
        .map_err(|e| e.to_string())?;
        Ok(Bytes::from(body.to_string()))
    }

    /// The translator of a streamed answer.
    pub fn stream(self, req: &ForwardRequest, created: u64) -> StreamTranslator {
        StreamTranslator::new(format_of(self.upstream), format_of(self.client), stream_context(req, created))
    }

    /// A complete answer in the client's format.
    pub fn response(self, req: &ForwardRequest, body: &[u8], created: u64) -> Result<Bytes, String> {
        switchyard_translate::translate_response(
            format_of(self.upstream),
            format_of(self.client),
            body,
            req.body.model(),
            created,
        )
        .map(Bytes::from)
        .map_err(|e| e.to_string())
    }

    /// A complete answer as a stream in the client's format (a streaming client
    /// whose upstream answered whole).
    pub fn response_as_stream(
        self,
        req: &ForwardRequest,
        body: &[u8],
        created: u64,
    ) -> Result<Bytes, String> {
        let cx = stream_context(req, created);
        switchyard_translate::stream_from_response(format_of(self.upstream), format_of(self.client), body, cx)
            .map_err(|e| e.to_string())
    }

    /// A whole upstream stream as one complete answer (a non-streaming client whose
    /// upstream streamed anyway).
    pub fn response_from_stream(
        self,
        req: &ForwardRequest,
        body: &[u8],
        created: u64,
    ) -> Result<Bytes, String> {
        switchyard_translate::response_from_stream(
            format_of(self.upstream),
            format_of(self.client),
            body,
            req.body.model(),
            created,
        )
        .map(Bytes::from)
        .map_err(|e| e.to_string())
    }

    /// An upstream error answer in the client's envelope.
    pub fn error(self, status: u16, body: &[u8]) -> Bytes {
        Bytes::from(switchyard_translate::translate_error(format_of(self.client), status, body))
    }
}

/// What a translated stream tells its client: the model it asked for, and usage
/// only if a Chat client asked for it (`stream_options.include_usage`).
fn stream_context(req: &ForwardRequest, created: u64) -> StreamContext {
    let include_usage = req
        .body
        .tree()
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    StreamContext { model: req.body.model().to_owned(), created, chat_include_usage: include_usage }
}

/// A same-format body for `candidate`: the client's bytes with the model spliced, or,
/// when its history carries reasoning markers from an earlier translated turn, the
/// body with this family's proofs restored and foreign reasoning dropped (a provider
/// rejects a proof it did not issue). The marker search is one `memmem` over the
/// body; clean bodies are never parsed.
pub fn native_body(req: &ForwardRequest, candidate: &Candidate) -> Bytes {
    let marked = matches!(req.format, ClientFormat::AnthropicMessages | ClientFormat::OpenaiResponses)
        && memchr::memmem::find(req.body.raw(), b"swy1.").is_some();
    if marked
        && let Some(mut restored) =
            switchyard_translate::thinking::restore_native(format_of(req.format), req.body.tree())
    {
        restored["model"] = serde_json::Value::String(candidate.model.to_string());
        return Bytes::from(restored.to_string());
    }
    req.body.with_model(&candidate.model)
}

/// Whether a client body can be read for translation (checked before routing when
/// any candidate needs it, so a malformed body is the client's 400, never a
/// failover).
pub fn check(format: ClientFormat, body: &serde_json::Value) -> Result<(), String> {
    switchyard_translate::check_request(format_of(format), body).map_err(|e| e.to_string())
}
