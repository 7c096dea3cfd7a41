//! The three wire formats as the translation tests see them: one connection per
//! format, each on its own fake upstream and provider id.

/// A wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    /// Anthropic Messages.
    Messages,
    /// OpenAI Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
}

/// All three.
pub const FORMATS: [Fmt; 3] = [Fmt::Messages, Fmt::Chat, Fmt::Responses];

impl Fmt {
    /// The judge's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Fmt::Messages => "messages",
            Fmt::Chat => "chat",
            Fmt::Responses => "responses",
        }
    }

    /// The provider id (and connection id) of the connection speaking it.
    pub fn provider(self) -> &'static str {
        match self {
            Fmt::Messages => "up-messages",
            Fmt::Chat => "up-chat",
            Fmt::Responses => "up-responses",
        }
    }

    /// The path its upstream is called on.
    pub fn path(self) -> &'static str {
        match self {
            Fmt::Messages => "/v1/messages",
            Fmt::Chat => "/v1/chat/completions",
            Fmt::Responses => "/v1/responses",
        }
    }

    /// The connection format that speaks only this.
    pub fn api_format(self) -> &'static str {
        match self {
            Fmt::Messages => "anthropic",
            Fmt::Chat => "openai-chat",
            Fmt::Responses => "openai-responses",
        }
    }
}

/// A config with the client key and one connection per format at `urls`.
pub fn one_connection_per_format(urls: &[(Fmt, String)]) -> String {
    let mut toml = crate::client_key_toml();
    for (f, url) in urls {
        let base = if *f == Fmt::Messages { url.clone() } else { format!("{url}/v1") };
        toml.push_str(&format!(
            "\n[[connections]]\nid = \"{p}\"\nprovider = \"{p}\"\napi_format = \"{format}\"\napi_key = \"sk-{p}\"\nbase_url = \"{base}\"\n",
            p = f.provider(),
            format = f.api_format(),
        ));
    }
    toml
}

/// One fake upstream per format (each failing loudly on an unscripted call) and a
/// gateway with one connection to each.
pub async fn fakes_and_gateway() -> (Vec<(Fmt, switchyard_testkit::FakeUpstream)>, crate::TestGateway) {
    let mut fakes = Vec::new();
    for f in FORMATS {
        let fallback = switchyard_testkit::Reply::json(
            500,
            serde_json::json!({"error": {"message": format!("unscripted call to the {} fake", f.name())}}),
        );
        fakes.push((f, switchyard_testkit::FakeUpstream::start(fallback).await));
    }
    let urls: Vec<(Fmt, String)> = fakes.iter().map(|(f, u)| (*f, u.url())).collect();
    let gw = crate::TestGateway::start(&one_connection_per_format(&urls)).await;
    (fakes, gw)
}
