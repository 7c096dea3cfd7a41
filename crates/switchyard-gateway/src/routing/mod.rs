//! Request routing: the in-memory routing table (connections, client keys, combos,
//! aliases) and the resolution of a client's `model` into ordered candidates.
//!
//! The table is an immutable snapshot published through an `ArcSwap`: the request
//! path loads it once per request without locks or database reads, and management
//! writes rebuild it from the store after committing.

pub mod connection;
mod memo;
mod resolve;
mod table;

pub use connection::{Connection, UpstreamEndpoint};
pub use resolve::{Candidate, CandidatePlan, RouteKind};
pub use table::{ClientKey, Combo, RoutingTable, SharedRouting};
