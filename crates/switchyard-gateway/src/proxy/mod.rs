//! The forwarding path: read the client body once, rewrite only its `model`, build
//! upstream headers from scratch, try candidates in order with failover, and relay
//! the chosen response chunk by chunk.

mod body;
mod claude_wall;
mod failure;
mod forward;
pub(crate) mod headers;
mod relay;

pub use body::ClientBody;
pub use forward::{ForwardRequest, forward};
pub use headers::upstream_headers;
