//! Time sources. The `Clock` trait lives in the resilience engine (pure code takes
//! `now`; the engine façade reads this clock); the gateway re-exports it so every
//! component shares one clock and tests can substitute a manual one.

pub use switchyard_resilience::clock::{Clock, ManualClock, SystemClock};
