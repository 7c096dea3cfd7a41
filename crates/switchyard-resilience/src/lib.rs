//! The pure resilience engine (scaffold; filled in by the following commits).
