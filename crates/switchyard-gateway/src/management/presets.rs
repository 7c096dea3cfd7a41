//! Provider presets (`GET /api/presets`): what the connection form fills in for a
//! well-known provider, so adding one takes only its key. Each base URL can be
//! pointed elsewhere (a mirror, a corporate proxy, a fake upstream in tests) with
//! `SWITCHYARD_PRESET_<ID>_BASE_URL` (`-` in the id becomes `_`).
//!
//! Formats: endpoints that speak only Chat Completions are `openai` here until
//! connections can say `openai-chat` (issue 14); Claude Code reaches them through a
//! combo or alias once translation exists.

use switchyard_types::presets::ProviderPresetView;
use switchyard_types::{ApiFormat, AuthKind};

use super::ManagementService;

struct Preset {
    id: &'static str,
    label: &'static str,
    provider: &'static str,
    api_format: ApiFormat,
    auth_kind: AuthKind,
    base_url: &'static str,
    models: &'static [&'static str],
    key_hint: &'static str,
    claude_login: bool,
}

const PRESETS: &[Preset] = &[
    Preset {
        id: "anthropic",
        label: "Anthropic API key",
        provider: "anthropic",
        api_format: ApiFormat::Anthropic,
        auth_kind: AuthKind::ApiKey,
        base_url: "https://api.anthropic.com",
        models: &["claude-sonnet-4-6", "claude-opus-4-6", "claude-haiku-4-5"],
        key_hint: "console.anthropic.com → API keys (sk-ant-api03-…)",
        claude_login: false,
    },
    Preset {
        id: "claude-account",
        label: "Claude subscription (Pro/Max) account",
        provider: "anthropic",
        api_format: ApiFormat::Anthropic,
        auth_kind: AuthKind::Oauth,
        base_url: "https://api.anthropic.com",
        models: &["claude-sonnet-4-6", "claude-opus-4-6", "claude-haiku-4-5"],
        key_hint: "log in with Claude Code on this machine, then import its login",
        claude_login: true,
    },
    Preset {
        id: "openai",
        label: "OpenAI API key",
        provider: "openai",
        api_format: ApiFormat::Openai,
        auth_kind: AuthKind::ApiKey,
        base_url: "https://api.openai.com/v1",
        models: &["gpt-5.5", "gpt-5.5-mini", "gpt-5-codex"],
        key_hint: "platform.openai.com → API keys (sk-proj-…)",
        claude_login: false,
    },
    Preset {
        id: "glm",
        label: "GLM (Z.ai), OpenAI-compatible endpoint",
        provider: "glm",
        api_format: ApiFormat::OpenaiChat,
        auth_kind: AuthKind::ApiKey,
        base_url: "https://api.z.ai/api/paas/v4",
        models: &["glm-4.6", "glm-4.5-air"],
        key_hint: "z.ai → API keys",
        claude_login: false,
    },
    Preset {
        id: "glm-anthropic",
        label: "GLM (Z.ai), Anthropic-compatible endpoint (for Claude Code)",
        provider: "glm",
        api_format: ApiFormat::Anthropic,
        auth_kind: AuthKind::ApiKey,
        base_url: "https://api.z.ai/api/anthropic",
        models: &["glm-4.6", "glm-4.5-air"],
        key_hint: "z.ai → API keys (the same key serves both endpoints)",
        claude_login: false,
    },
    Preset {
        id: "deepseek",
        label: "DeepSeek",
        provider: "deepseek",
        api_format: ApiFormat::OpenaiChat,
        auth_kind: AuthKind::ApiKey,
        base_url: "https://api.deepseek.com/v1",
        models: &["deepseek-chat", "deepseek-reasoner"],
        key_hint: "platform.deepseek.com → API keys",
        claude_login: false,
    },
    Preset {
        id: "kimi",
        label: "Kimi (Moonshot AI)",
        provider: "kimi",
        api_format: ApiFormat::OpenaiChat,
        auth_kind: AuthKind::ApiKey,
        base_url: "https://api.moonshot.ai/v1",
        models: &["kimi-k2-0905-preview", "kimi-k2-turbo-preview"],
        key_hint: "platform.moonshot.ai → API keys",
        claude_login: false,
    },
    Preset {
        id: "openrouter",
        label: "OpenRouter",
        provider: "openrouter",
        api_format: ApiFormat::OpenaiChat,
        auth_kind: AuthKind::ApiKey,
        base_url: "https://openrouter.ai/api/v1",
        models: &["anthropic/claude-sonnet-4.5", "openai/gpt-5", "z-ai/glm-4.6"],
        key_hint: "openrouter.ai → Keys (sk-or-…)",
        claude_login: false,
    },
    Preset {
        id: "ollama",
        label: "Ollama (local)",
        provider: "ollama",
        api_format: ApiFormat::OpenaiChat,
        auth_kind: AuthKind::None,
        base_url: "http://127.0.0.1:11434/v1",
        models: &["qwen3-coder:30b", "gpt-oss:20b"],
        key_hint: "",
        claude_login: false,
    },
    Preset {
        id: "lmstudio",
        label: "LM Studio (local)",
        provider: "lmstudio",
        api_format: ApiFormat::OpenaiChat,
        auth_kind: AuthKind::None,
        base_url: "http://127.0.0.1:1234/v1",
        models: &["qwen/qwen3-coder-30b"],
        key_hint: "",
        claude_login: false,
    },
];

/// The environment variable that overrides preset `id`'s base URL.
pub fn base_url_var(id: &str) -> String {
    format!("SWITCHYARD_PRESET_{}_BASE_URL", id.to_ascii_uppercase().replace('-', "_"))
}

impl ManagementService {
    /// `GET /api/presets`: every preset, with the base URL in force.
    pub fn presets(&self) -> Vec<ProviderPresetView> {
        let env = self.resilience.env();
        PRESETS
            .iter()
            .map(|p| ProviderPresetView {
                id: p.id.to_owned(),
                label: p.label.to_owned(),
                provider: p.provider.to_owned(),
                api_format: p.api_format,
                auth_kind: p.auth_kind,
                base_url: env
                    .var(&base_url_var(p.id))
                    .map(|v| v.trim().trim_end_matches('/').to_owned())
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| p.base_url.to_owned()),
                models: p.models.iter().map(|m| (*m).to_owned()).collect(),
                key_hint: p.key_hint.to_owned(),
                claude_login: p.claude_login,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preset_ids_are_unique_and_their_override_variables_are_named_after_them() {
        let mut ids: Vec<&str> = PRESETS.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), PRESETS.len());
        assert_eq!(base_url_var("glm-anthropic"), "SWITCHYARD_PRESET_GLM_ANTHROPIC_BASE_URL");
        for p in PRESETS {
            assert!(!p.models.is_empty(), "{}: a models list", p.id);
            assert_eq!(
                p.auth_kind == AuthKind::None,
                p.key_hint.is_empty(),
                "{}: a key hint iff a key",
                p.id
            );
        }
    }
}
