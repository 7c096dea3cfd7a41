//! Reasoning across formats. Each provider family verifies only its own reasoning
//! proof: an Anthropic `signature`, a Responses `encrypted_content`. When reasoning is
//! shown to a client of another format, its proof travels inside the field that
//! client replays (a thinking block's `signature`, a reasoning item's
//! `encrypted_content`) as a marker `swy1.<base64url JSON>`, so that on the next turn
//! the history can be given back to the family that produced it, and dropped for
//! any other (a foreign or missing proof makes the upstream reject the request).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::ir::Reasoning;

const PREFIX: &str = "swy1.";

/// The marker carrying `origin` (and, for Anthropic thinking, its text, which
/// Anthropic needs back verbatim with the signature).
pub fn encode(origin: &Reasoning, text: &str) -> String {
    let doc = match origin {
        Reasoning::Anthropic { signature } => json!({ "k": "anthropic", "sig": signature, "text": text }),
        Reasoning::AnthropicRedacted { data } => json!({ "k": "anthropic-redacted", "data": data }),
        Reasoning::Responses { id, encrypted } => json!({ "k": "responses", "id": id, "enc": encrypted }),
        Reasoning::Plain => json!({ "k": "plain" }),
    };
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(doc.to_string()))
}

/// Reads a marker: the origin and, for Anthropic thinking, the original text.
/// `None` when `s` is not a marker (a provider's own proof).
pub fn decode(s: &str) -> Option<(Reasoning, Option<String>)> {
    let b = URL_SAFE_NO_PAD.decode(s.strip_prefix(PREFIX)?).ok()?;
    let doc: Value = serde_json::from_slice(&b).ok()?;
    let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(match doc.get("k").and_then(Value::as_str)? {
        "anthropic" => (Reasoning::Anthropic { signature: text("sig")? }, text("text")),
        "anthropic-redacted" => (Reasoning::AnthropicRedacted { data: text("data")? }, None),
        "responses" => (Reasoning::Responses { id: text("id"), encrypted: text("enc") }, None),
        _ => (Reasoning::Plain, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_and_foreign_proofs_are_not_markers() {
        for origin in [
            Reasoning::Anthropic { signature: "EqQBCkYI".into() },
            Reasoning::AnthropicRedacted { data: "opaque".into() },
            Reasoning::Responses { id: Some("rs_1".into()), encrypted: Some("gAAAA".into()) },
            Reasoning::Plain,
        ] {
            let m = encode(&origin, "because");
            assert_eq!(decode(&m).map(|d| d.0), Some(origin));
        }
        assert_eq!(decode("EqQBCkYIBRgCIkA"), None);
        assert_eq!(decode("swy1.!!"), None);
    }
}

/// A same-format body whose history carries markers (reasoning a client of this
/// format was shown from another provider family on an earlier, translated turn),
/// made fit for an upstream of this format: a marker carrying this family's own proof
/// is restored to it, any other marked reasoning is dropped. `None` when the body has
/// no marker (it is then relayed byte for byte).
pub fn restore_native(format: crate::Format, body: &Value) -> Option<Value> {
    let mut v = body.clone();
    let changed = match format {
        crate::Format::Messages => restore_messages(&mut v),
        crate::Format::Responses => restore_responses(&mut v),
        crate::Format::Chat => false,
    };
    changed.then_some(v)
}

fn restore_messages(v: &mut Value) -> bool {
    let mut changed = false;
    let Some(messages) = v.get_mut("messages").and_then(Value::as_array_mut) else { return false };
    for m in messages.iter_mut() {
        let Some(blocks) = m.get_mut("content").and_then(Value::as_array_mut) else { continue };
        let before = blocks.len();
        let mut restored = Vec::with_capacity(before);
        for b in blocks.drain(..) {
            let marker = (b["type"] == "thinking")
                .then(|| b.get("signature").and_then(Value::as_str))
                .flatten()
                .and_then(decode);
            match marker {
                None => restored.push(b),
                Some((Reasoning::Anthropic { signature }, text)) => {
                    changed = true;
                    let text = text.unwrap_or_else(|| b["thinking"].as_str().unwrap_or_default().to_owned());
                    restored.push(json!({"type": "thinking", "thinking": text, "signature": signature}));
                }
                Some((Reasoning::AnthropicRedacted { data }, _)) => {
                    changed = true;
                    restored.push(json!({"type": "redacted_thinking", "data": data}));
                }
                Some(_) => changed = true,
            }
        }
        *blocks = restored;
    }
    if changed {
        // A turn that held only foreign reasoning is gone; Anthropic refuses empty turns.
        messages.retain(|m| m["content"].as_array().is_none_or(|c| !c.is_empty()));
        // Thinking stays on only if the tool loop's last assistant turn still opens
        // with a thinking block.
        let last = messages.iter().rev().find(|m| m["role"] == "assistant");
        let blocks = last.and_then(|m| m["content"].as_array()).map_or(&[][..], Vec::as_slice);
        let in_loop = blocks.iter().any(|b| b["type"] == "tool_use");
        let opens =
            blocks.first().is_some_and(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking");
        if in_loop
            && !opens
            && let Some(obj) = v.as_object_mut()
        {
            obj.remove("thinking");
        }
    }
    changed
}

fn restore_responses(v: &mut Value) -> bool {
    let mut changed = false;
    let Some(items) = v.get_mut("input").and_then(Value::as_array_mut) else { return false };
    let mut kept = Vec::with_capacity(items.len());
    for mut item in items.drain(..) {
        let marker = (item["type"] == "reasoning")
            .then(|| item.get("encrypted_content").and_then(Value::as_str))
            .flatten()
            .and_then(decode);
        match marker {
            None => kept.push(item),
            Some((Reasoning::Responses { id, encrypted: Some(encrypted) }, _)) => {
                changed = true;
                item["encrypted_content"] = json!(encrypted);
                if let Some(id) = id {
                    item["id"] = json!(id);
                }
                kept.push(item);
            }
            Some(_) => changed = true,
        }
    }
    *items = kept;
    changed
}

#[cfg(test)]
mod restore_tests {
    use super::*;
    use crate::Format;

    #[test]
    fn only_this_familys_proofs_go_back_and_clean_bodies_are_untouched() {
        let plain = encode(&Reasoning::Plain, "from glm");
        let own = encode(&Reasoning::Anthropic { signature: "EqOwn".into() }, "mine");
        let body = json!({"model": "m", "thinking": {"type": "enabled", "budget_tokens": 2048}, "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "from glm", "signature": plain}]},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "shown", "signature": own},
                                              {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]});
        let out = restore_native(Format::Messages, &body).unwrap_or_default();
        let m = out["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(m.len(), 4, "the turn of only foreign reasoning is gone: {out}");
        assert_eq!(m[2]["content"][0], json!({"type": "thinking", "thinking": "mine", "signature": "EqOwn"}));
        assert!(out.get("thinking").is_some(), "the loop still opens with thinking");
        assert_eq!(
            restore_native(Format::Messages, &json!({"messages": [{"role": "user", "content": "x"}]})),
            None
        );

        let codex = json!({"input": [
            {"type": "reasoning", "summary": [], "encrypted_content": encode(&Reasoning::Responses { id: Some("rs_9".into()), encrypted: Some("gAAA".into()) }, "")},
            {"type": "reasoning", "summary": [], "encrypted_content": own},
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA-native"}]});
        let out = restore_native(Format::Responses, &codex).unwrap_or_default();
        let items = out["input"].as_array().cloned().unwrap_or_default();
        assert_eq!(items.len(), 2, "{out}");
        assert_eq!(
            (items[0]["encrypted_content"].as_str(), items[0]["id"].as_str()),
            (Some("gAAA"), Some("rs_9"))
        );
        assert_eq!(items[1]["encrypted_content"], "gAAAA-native");
    }
}
