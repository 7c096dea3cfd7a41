//! The wire formats clients and upstreams speak, and how a connection authenticates.

use serde::{Deserialize, Serialize};

/// The API family an upstream connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ApiFormat {
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// OpenAI Chat Completions and Responses (`/chat/completions`, `/responses`).
    Openai,
}

impl ApiFormat {
    /// The wire name used in config files and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiFormat::Anthropic => "anthropic",
            ApiFormat::Openai => "openai",
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
    /// The upstream format that can serve this endpoint without translation.
    pub fn upstream_format(self) -> ApiFormat {
        match self {
            ClientFormat::AnthropicMessages => ApiFormat::Anthropic,
            ClientFormat::OpenaiChat | ClientFormat::OpenaiResponses => ApiFormat::Openai,
        }
    }

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
