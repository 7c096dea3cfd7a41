//! Tests that need the whole command set on tauri's mock runtime: the bindings
//! export and the IPC/REST parity check.

mod bindings;
mod parity;
