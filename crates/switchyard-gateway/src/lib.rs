//! The Switchyard gateway runtime: a local LLM gateway that spreads IDE agents'
//! traffic over the user's provider connections and fails over between them.
//!
//! Layout: `store` (SQLite), `routing` (snapshot + model resolution), `proxy`
//! (forwarding, failover, SSE relay), `http` (the `/v1` and `/api` routers and their
//! guards), `management` (the one service behind REST and IPC), `config` (TOML
//! import), `conn` (client connections: timeouts and the cap), `server`
//! (start/shutdown).

pub mod affinity;
pub mod claude_import;
pub mod clock;
pub mod config;
pub mod conn;
pub mod control;
pub mod errors;
pub mod header_names;
pub mod hot_text;
mod http;
pub mod leases;
pub mod management;
pub mod oauth;
pub mod proxy;
pub mod request_log;
pub mod resilience;
pub mod retry_wait;
pub mod routability;
pub mod routing;
pub mod secrets;
pub mod server;
pub mod setup;
pub mod sleeper;
pub mod state;
pub mod store;
pub mod team;
#[cfg(test)]
mod test_support;
pub mod usage;

pub use server::{Gateway, GatewayConfig, TokenSource};
