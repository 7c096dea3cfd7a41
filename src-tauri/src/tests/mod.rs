//! Tests that need the whole command set on tauri's mock runtime: the bindings
//! export, the IPC/REST parity check, and the settings window's making.

mod bindings;
mod parity;
mod window;

/// An IPC call of `cmd` with `args` as the webview's page makes it.
fn ipc_request(cmd: &str, args: serde_json::Value) -> tauri::webview::InvokeRequest {
    tauri::webview::InvokeRequest {
        cmd: cmd.to_owned(),
        callback: tauri::ipc::CallbackFn(0),
        error: tauri::ipc::CallbackFn(1),
        url: "tauri://localhost".parse().unwrap_or_else(|e| panic!("{e}")),
        body: tauri::ipc::InvokeBody::Json(args),
        headers: Default::default(),
        invoke_key: tauri::test::INVOKE_KEY.to_owned(),
    }
}
