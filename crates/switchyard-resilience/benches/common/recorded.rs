//! Every event of the recorded upstream streams (`tests/fixtures/upstream-recordings`),
//! shared by the stream-event bench and `stream_watch`'s tests (the shortcut's and judge's).

use std::path::Path;

/// `(event, data)` of every event in the recordings' `.sse` files.
pub fn recorded_events() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/upstream-recordings");
    let mut out = Vec::new();
    for format in ["anthropic-messages", "openai-chat", "openai-responses"] {
        let Ok(dir) = std::fs::read_dir(root.join(format)) else { continue };
        for file in dir.flatten() {
            if file.path().extension().is_none_or(|e| e != "sse") {
                continue;
            }
            let text = std::fs::read_to_string(file.path()).unwrap_or_default().replace("\r\n", "\n");
            for block in text.split("\n\n") {
                let mut event = "message".to_owned();
                let mut data: Vec<&str> = Vec::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim_start().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                if !data.is_empty() {
                    out.push((event, data.join("\n")));
                }
            }
        }
    }
    out
}
