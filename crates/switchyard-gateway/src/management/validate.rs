//! Validation of management documents. Every check adds an issue with a JSON
//! pointer; a document is applied only when the list is empty, so nothing is ever
//! half-written.

use serde_json::Value;
use switchyard_types::api::ValidationIssue;
use switchyard_types::{ApiFormat, AuthKind};

use crate::routing::connection::default_base_url;

/// Collects issues for one document.
#[derive(Debug, Default)]
pub struct Issues(pub Vec<ValidationIssue>);

impl Issues {
    /// Adds an issue at `path`.
    pub fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(ValidationIssue { path: path.into(), message: message.into() });
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn matches_charset(s: &str, extra: &str, allow_upper: bool) -> bool {
    s.chars().all(|c| {
        c.is_ascii_lowercase()
            || c.is_ascii_digit()
            || extra.contains(c)
            || (allow_upper && c.is_ascii_uppercase())
    })
}

/// Whether a `/`-separated segment of `s` is `.` or `..`: such an id would be
/// resolved away by URL normalisation and could never be addressed in a path.
fn has_dot_segment(s: &str) -> bool {
    s.split('/').any(|segment| segment == "." || segment == "..")
}

/// Connection ids: `[A-Za-z0-9._-]{1,64}`, not `.` or `..`.
pub fn check_connection_id(issues: &mut Issues, path: &str, id: &str) {
    if id.is_empty() || id.len() > 64 || !matches_charset(id, "._-", true) {
        issues.add(path, "must be 1–64 characters of A–Z, a–z, 0–9, '.', '_' or '-'");
    } else if has_dot_segment(id) {
        issues.add(path, "must not be '.' or '..' (it could not be addressed in a URL path)");
    }
}

/// Provider ids: `[a-z0-9._-]{1,64}`.
pub fn check_provider(issues: &mut Issues, provider: &str) {
    if provider.is_empty() || provider.len() > 64 || !matches_charset(provider, "._-", false) {
        issues.add("/provider", "must be 1–64 characters of a–z, 0–9, '.', '_' or '-'");
    }
}

/// The effective format: stated, or implied by the provider; never contradicting it.
pub fn resolve_format(issues: &mut Issues, provider: &str, stated: Option<ApiFormat>) -> ApiFormat {
    let implied = ApiFormat::implied_by_provider(provider);
    match (stated, implied) {
        (Some(s), Some(i)) if s.is_openai_family() != i.is_openai_family() => {
            issues.add(
                "/apiFormat",
                format!("provider '{provider}' speaks the {} format, not {}", i.as_str(), s.as_str()),
            );
            i
        }
        (Some(s), _) => s,
        (None, Some(i)) => i,
        (None, None) => {
            issues.add(
                "/apiFormat",
                format!("provider '{provider}' has no implied format: state \"anthropic\", \"openai\", \"openai-chat\" or \"openai-responses\""),
            );
            ApiFormat::Openai
        }
    }
}

/// Credentials must match the auth kind.
pub fn check_credentials(
    issues: &mut Issues,
    auth: AuthKind,
    api_key: Option<&str>,
    access_token: Option<&str>,
) {
    let present = |s: Option<&str>| s.is_some_and(|s| !s.trim().is_empty());
    match auth {
        AuthKind::ApiKey if !present(api_key) => {
            issues.add("/apiKey", "required when authKind is \"api_key\"")
        }
        AuthKind::Oauth if !present(access_token) => {
            issues.add("/accessToken", "required when authKind is \"oauth\"")
        }
        _ => {}
    }
    for (path, value) in [("/apiKey", api_key), ("/accessToken", access_token)] {
        if value.is_some_and(|v| v.chars().any(|c| c.is_control() || c == ' ')) {
            issues.add(path, "must not contain spaces or control characters");
        }
    }
}

/// Base URLs: absolute `http`/`https`; required without a provider default.
pub fn check_base_url(issues: &mut Issues, provider: &str, base_url: Option<&str>) {
    match base_url {
        None if default_base_url(provider).is_none() => {
            issues.add("/baseUrl", format!("required: provider '{provider}' has no default base URL"))
        }
        None => {}
        Some(url) => match reqwest::Url::parse(url) {
            Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => {
                if u.query().is_some() || u.fragment().is_some() {
                    issues.add("/baseUrl", "must not contain a query or fragment");
                }
            }
            _ => issues.add("/baseUrl", "must be an absolute http:// or https:// URL"),
        },
    }
}

/// Display names: 1–128 characters.
pub fn check_name(issues: &mut Issues, path: &str, name: &str) {
    if name.trim().is_empty() || name.chars().count() > 128 {
        issues.add(path, "must be 1–128 characters");
    }
}

/// Concurrency caps: 1–10000.
pub fn check_max_concurrent(issues: &mut Issues, value: Option<u32>) {
    if value.is_some_and(|v| !(1..=10_000).contains(&v)) {
        issues.add("/maxConcurrent", "must be between 1 and 10000 (omit for no cap)");
    }
}

/// Rate-limit overrides: caps 1–10000, at most 1000 model caps keyed by a model id
/// (1–200 characters, no whitespace), budgets 1 ms–24 h.
pub fn check_rate_limit_overrides(issues: &mut Issues, o: &switchyard_types::api::RateLimitOverrides) {
    const DAY_MS: u32 = 86_400_000;
    if o.max_concurrent.is_some_and(|v| !(1..=10_000).contains(&v)) {
        issues.add("/rateLimitOverrides/maxConcurrent", "must be between 1 and 10000 (omit for no cap)");
    }
    if o.model_concurrency.len() > 1000 {
        issues.add("/rateLimitOverrides/modelConcurrency", "at most 1000 model caps");
    }
    for (model, cap) in &o.model_concurrency {
        let path =
            format!("/rateLimitOverrides/modelConcurrency/{}", model.replace('~', "~0").replace('/', "~1"));
        if model.is_empty() || model.len() > 200 || model.chars().any(char::is_whitespace) {
            issues.add(path.clone(), "model ids must be 1–200 characters without whitespace");
        }
        if !(1..=10_000).contains(cap) {
            issues.add(path, "must be between 1 and 10000");
        }
    }
    for (path, v) in [
        ("/rateLimitOverrides/maxWaitMs", o.max_wait_ms),
        ("/rateLimitOverrides/executionMaxWaitMs", o.execution_max_wait_ms),
    ] {
        if v.is_some_and(|v| !(1..=DAY_MS).contains(&v)) {
            issues.add(path, "must be between 1 and 86400000 ms (omit to use the settings)");
        }
    }
}

/// Model catalogues: up to 1000 ids, each 1–200 characters without whitespace.
pub fn check_models(issues: &mut Issues, models: &[String]) {
    if models.len() > 1000 {
        issues.add("/models", "at most 1000 models");
    }
    for (i, m) in models.iter().enumerate() {
        if m.is_empty() || m.len() > 200 || m.chars().any(char::is_whitespace) {
            issues.add(format!("/models/{i}"), "must be 1–200 characters without whitespace");
        }
    }
}

/// Provider-specific options: a JSON object; the Claude keys have fixed types.
pub fn check_provider_specific(issues: &mut Issues, value: &Value) {
    let Some(map) = value.as_object() else {
        issues.add("/providerSpecific", "must be a JSON object");
        return;
    };
    for (key, v) in map {
        let ok = match key.as_str() {
            "lowPriorityMode" | "autoLimitReset" => v.is_boolean(),
            "organizationUUID" | "oauthClientId" => v.is_string() || v.is_null(),
            "oauthTokenUrl" => v.as_str().is_some_and(|u| {
                reqwest::Url::parse(u).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
            }),
            "quotaFamilies" => v.as_object().is_some_and(|m| {
                m.iter().all(|(prefix, family)| {
                    !prefix.is_empty() && family.as_str().is_some_and(|f| !f.trim().is_empty())
                })
            }),
            _ => true,
        };
        if !ok {
            let expected = match key.as_str() {
                "organizationUUID" | "oauthClientId" => "a string",
                "oauthTokenUrl" => "an absolute http:// or https:// URL",
                "quotaFamilies" => {
                    "an object mapping model-id prefixes to family names, e.g. {\"glm-\": \"plan\"}"
                }
                _ => "true or false",
            };
            issues.add(format!("/providerSpecific/{key}"), format!("must be {expected}"));
        }
    }
}

/// Combo and alias names: `[A-Za-z0-9_/.:-]{1,128}`, no `.` or `..` segment.
pub fn check_route_name(issues: &mut Issues, path: &str, name: &str) {
    if name.is_empty() || name.len() > 128 || !matches_charset(name, "_/.:-", true) {
        issues.add(path, "must be 1–128 characters of A–Z, a–z, 0–9, '_', '/', '.', ':' or '-'");
    } else if has_dot_segment(name) {
        issues.add(
            path,
            "must not be or contain a '.' or '..' segment (it could not be addressed in a URL path)",
        );
    }
}

/// Known client-key scopes.
pub const KNOWN_SCOPES: [&str; 1] = ["lease:exclusive"];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn format_is_implied_or_required() {
        let mut i = Issues::default();
        assert_eq!(resolve_format(&mut i, "anthropic", None), ApiFormat::Anthropic);
        assert_eq!(resolve_format(&mut i, "openai-compatible", None), ApiFormat::Openai);
        assert!(i.is_empty());
        resolve_format(&mut i, "glm", None);
        resolve_format(&mut i, "anthropic", Some(ApiFormat::Openai));
        assert_eq!(i.0.len(), 2);
    }

    #[test]
    fn ids_and_names_reject_dot_segments() {
        let mut i = Issues::default();
        for ok in ["a.b", "...", ".a", "key-1"] {
            check_connection_id(&mut i, "/id", ok);
        }
        for ok in ["anthropic/claude-x", "a..b", "v1.2"] {
            check_route_name(&mut i, "/name", ok);
        }
        assert!(i.is_empty(), "{:?}", i.0);
        for bad in [".", ".."] {
            check_connection_id(&mut i, "/id", bad);
        }
        for bad in [".", "..", "a/../b", "./x", "x/."] {
            check_route_name(&mut i, "/name", bad);
        }
        assert_eq!(i.0.len(), 7);
        assert!(i.0.iter().all(|x| x.message.contains("'..'")));
    }

    #[test]
    fn base_url_rules() {
        let mut i = Issues::default();
        check_base_url(&mut i, "anthropic", None);
        check_base_url(&mut i, "glm", Some("http://127.0.0.1:9001/v1"));
        assert!(i.is_empty());
        check_base_url(&mut i, "glm", None);
        check_base_url(&mut i, "glm", Some("ftp://x"));
        check_base_url(&mut i, "glm", Some("not a url"));
        assert_eq!(i.0.len(), 3);
    }

    #[test]
    fn claude_options_are_typed() {
        let mut i = Issues::default();
        check_provider_specific(&mut i, &json!({"lowPriorityMode": true, "other": 1}));
        assert!(i.is_empty());
        check_provider_specific(&mut i, &json!({"autoLimitReset": "yes"}));
        check_provider_specific(&mut i, &json!([1]));
        assert_eq!(
            i.0.iter().map(|x| x.path.as_str()).collect::<Vec<_>>(),
            ["/providerSpecific/autoLimitReset", "/providerSpecific"]
        );
    }
}
