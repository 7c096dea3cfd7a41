//! Types shared by every Switchyard component: the management API's request and
//! response documents, the stable error codes, and small value types.
//!
//! Everything here is plain data (serde + specta, no I/O) so the REST API, the desktop
//! IPC and the generated TypeScript bindings all speak the same documents. Rules of the
//! house: no `u64`/`i64`/`usize` fields in a DTO (specta refuses them for TypeScript);
//! wall-clock instants are [`UnixMillis`]; DTO names end in `View`, `Request`, `Patch`
//! or `Result`.

pub mod api;
pub mod error_code;
pub mod presets;
pub mod requests;
pub mod resilience;
pub mod routability;
pub mod settings;
pub mod status;
pub mod time;
pub mod usage;
pub mod wire;

pub use error_code::ErrorCode;
pub use settings::ResilienceSettings;
pub use time::UnixMillis;
pub use wire::{ApiFormat, AuthKind, ClientFormat};
