//! The pure resilience engine (in progress).

pub mod backoff;
pub mod breaker;
pub mod classify;
pub mod clock;
pub mod cooldown;
pub mod lockout;
pub mod outcome;
