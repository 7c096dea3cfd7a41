//! The non-standard header names the gateway reads or writes, parsed once. A
//! look-up or insert by `&str` validates and lower-cases the name again on every
//! call; at ~17 such calls a request that was ~6k instructions per request
//! (callgrind, `scripts/instructions.sh`), more than hyper's whole header parse.

use http::HeaderName;

/// The request id on every answer (`x-switchyard-request-id`).
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-switchyard-request-id");
/// The connection that served the answer.
pub const CONNECTION: HeaderName = HeaderName::from_static("x-switchyard-connection");
/// An exclusive lease's owner token.
pub const LEASE_OWNER: HeaderName = HeaderName::from_static("x-switchyard-lease-owner");
/// An exclusive lease's fencing generation.
pub const LEASE_GENERATION: HeaderName = HeaderName::from_static("x-switchyard-lease-generation");
/// Anthropic's API version.
pub const ANTHROPIC_VERSION: HeaderName = HeaderName::from_static("anthropic-version");
/// Anthropic's beta flags.
pub const ANTHROPIC_BETA: HeaderName = HeaderName::from_static("anthropic-beta");
/// Claude Code's app marker.
pub const X_APP: HeaderName = HeaderName::from_static("x-app");
/// OpenAI's beta flags.
pub const OPENAI_BETA: HeaderName = HeaderName::from_static("openai-beta");
/// Anthropic-style API key.
pub const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
/// A browser's `Sec-Fetch-Site`.
pub const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");
/// A browser's `Sec-Fetch-Mode`.
pub const SEC_FETCH_MODE: HeaderName = HeaderName::from_static("sec-fetch-mode");
