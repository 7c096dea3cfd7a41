//! The wire formats clients and upstreams speak, and how a connection authenticates.

use serde::{Deserialize, Serialize};

/// What an upstream connection speaks natively. A client request in another format
/// is translated on its way there (and the answer on its way back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
pub enum ApiFormat {
    /// Anthropic Messages (`/v1/messages`).
    #[serde(rename = "anthropic")]
    Anthropic,
    /// OpenAI itself: Chat Completions and Responses (`/chat/completions`,
    /// `/responses`).
    #[serde(rename = "openai")]
    Openai,
    /// Chat Completions only (GLM, DeepSeek, OpenRouter, Ollama, LM Studio, …).
    #[serde(rename = "openai-chat")]
    OpenaiChat,
    /// Responses only.
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
}

impl ApiFormat {
    /// The wire name used in config files and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiFormat::Anthropic => "anthropic",
            ApiFormat::Openai => "openai",
            ApiFormat::OpenaiChat => "openai-chat",
            ApiFormat::OpenaiResponses => "openai-responses",
        }
    }

    /// Reads a wire name.
    pub fn parse(s: &str) -> Option<ApiFormat> {
        match s {
            "anthropic" => Some(ApiFormat::Anthropic),
            "openai" => Some(ApiFormat::Openai),
            "openai-chat" | "openai_chat" => Some(ApiFormat::OpenaiChat),
            "openai-responses" | "openai_responses" => Some(ApiFormat::OpenaiResponses),
            _ => None,
        }
    }

    /// Whether the upstream is OpenAI-shaped (bearer auth, `/v1` bases, `/models`).
    pub fn is_openai_family(self) -> bool {
        !matches!(self, ApiFormat::Anthropic)
    }

    /// Whether a client of `client`'s format is served without translation.
    pub fn serves_natively(self, client: ClientFormat) -> bool {
        matches!(
            (self, client),
            (ApiFormat::Anthropic, ClientFormat::AnthropicMessages)
                | (ApiFormat::Openai, ClientFormat::OpenaiChat | ClientFormat::OpenaiResponses)
                | (ApiFormat::OpenaiChat, ClientFormat::OpenaiChat)
                | (ApiFormat::OpenaiResponses, ClientFormat::OpenaiResponses)
        )
    }

    /// The format a request of `client`'s format is sent in: its own when this
    /// upstream speaks it, else this upstream's (Chat Completions for an OpenAI
    /// upstream asked by a Messages client: every OpenAI-compatible server speaks it).
    pub fn wire_for(self, client: ClientFormat) -> ClientFormat {
        if self.serves_natively(client) {
            return client;
        }
        match self {
            ApiFormat::Anthropic => ClientFormat::AnthropicMessages,
            ApiFormat::Openai | ApiFormat::OpenaiChat => ClientFormat::OpenaiChat,
            ApiFormat::OpenaiResponses => ClientFormat::OpenaiResponses,
        }
    }

    /// The format a well-known provider id implies, if any. Other provider ids (e.g.
    /// `glm`) must state their format explicitly.
    pub fn implied_by_provider(provider: &str) -> Option<ApiFormat> {
        match provider {
            "anthropic" => Some(ApiFormat::Anthropic),
            "openai" | "openai-compatible" => Some(ApiFormat::Openai),
            _ => None,
        }
    }
}

/// How a connection authenticates to its upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum AuthKind {
    /// A static API key (`x-api-key` for Anthropic, bearer for OpenAI formats).
    ApiKey,
    /// An OAuth access token (Claude subscription accounts), sent as a bearer token.
    Oauth,
    /// No credentials (local model servers such as Ollama or LM Studio).
    None,
}

impl AuthKind {
    /// The wire name used in config files and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthKind::ApiKey => "api_key",
            AuthKind::Oauth => "oauth",
            AuthKind::None => "none",
        }
    }
}

/// The client-facing endpoint family a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ClientFormat {
    /// `POST /v1/messages` and `/v1/messages/count_tokens`.
    AnthropicMessages,
    /// `POST /v1/chat/completions`.
    OpenaiChat,
    /// `POST /v1/responses`.
    OpenaiResponses,
}

impl ClientFormat {
    /// A human name for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            ClientFormat::AnthropicMessages => "the Anthropic Messages format (/v1/messages)",
            ClientFormat::OpenaiChat => "the OpenAI Chat Completions format (/v1/chat/completions)",
            ClientFormat::OpenaiResponses => "the OpenAI Responses format (/v1/responses)",
        }
    }

    /// Whether errors are rendered in Anthropic's envelope rather than OpenAI's.
    pub fn is_anthropic(self) -> bool {
        matches!(self, ClientFormat::AnthropicMessages)
    }
}
