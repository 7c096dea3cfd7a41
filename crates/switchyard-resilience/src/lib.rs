//! The pure resilience engine (in progress).

pub mod backoff;
pub mod classify;
pub mod clock;
pub mod outcome;
