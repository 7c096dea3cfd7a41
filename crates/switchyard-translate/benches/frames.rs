//! The translation cost per streamed frame, for each of the six directions: a
//! realistic answer (a text block of 200 deltas, then a tool call whose arguments
//! arrive in 40 fragments) rendered in the upstream's format, pushed through a
//! [`StreamTranslator`] one frame at a time, as the relay releases them. Reported per
//! upstream frame. Same-format streams never reach the translator (relayed byte for
//! byte), so they cost nothing here; `docs/benchmarks.md` has the figures.
//!
//! `cargo bench -p switchyard-translate --bench frames`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use switchyard_translate::{Format, StreamContext, StreamTranslator};

/// The upstream's frames for the benchmark answer in format `f`.
fn frames(f: Format) -> Vec<String> {
    let words: Vec<String> = (0..200).map(|i| format!("word{i} ")).collect();
    let args: Vec<String> = (0..40).map(|i| format!("\"k{i}\": \"v{i}\", ")).collect();
    let named = |e: &str, d: serde_json::Value| format!("event: {e}\ndata: {d}\n\n");
    let data = |d: serde_json::Value| format!("data: {d}\n\n");
    let mut out = Vec::new();
    match f {
        Format::Messages => {
            out.push(named("message_start", json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": null, "usage": {"input_tokens": 100, "output_tokens": 1}}})));
            out.push(named("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
            for w in &words {
                out.push(named("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}})));
            }
            out.push(named("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
            out.push(named("content_block_start", json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "edit", "input": {}}})));
            for a in &args {
                out.push(named("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": a}})));
            }
            out.push(named("content_block_stop", json!({"type": "content_block_stop", "index": 1})));
            out.push(named("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 300}})));
            out.push(named("message_stop", json!({"type": "message_stop"})));
        }
        Format::Chat => {
            let chunk = |d: serde_json::Value, fin: serde_json::Value| {
                data(
                    json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": d, "finish_reason": fin}]}),
                )
            };
            out.push(chunk(json!({"role": "assistant", "content": ""}), json!(null)));
            for w in &words {
                out.push(chunk(json!({"content": w}), json!(null)));
            }
            out.push(chunk(json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "edit", "arguments": ""}}]}), json!(null)));
            for a in &args {
                out.push(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}),
                    json!(null),
                ));
            }
            out.push(chunk(json!({}), json!("tool_calls")));
            out.push(data(json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 300, "total_tokens": 400}})));
            out.push("data: [DONE]\n\n".to_owned());
        }
        Format::Responses => {
            let mut seq = 0;
            let mut ev = |t: &str, mut d: serde_json::Value| {
                d["type"] = json!(t);
                d["sequence_number"] = json!(seq);
                seq += 1;
                named(t, d)
            };
            out.push(ev(
                "response.created",
                json!({"response": {"id": "resp_1", "status": "in_progress", "output": []}}),
            ));
            out.push(ev("response.output_item.added", json!({"output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}})));
            out.push(ev("response.content_part.added", json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": ""}})));
            for w in &words {
                out.push(ev(
                    "response.output_text.delta",
                    json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": w}),
                ));
            }
            out.push(ev("response.output_item.done", json!({"output_index": 0, "item": {"id": "msg_1", "type": "message", "content": [{"type": "output_text", "text": words.concat()}]}})));
            out.push(ev("response.output_item.added", json!({"output_index": 1, "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "edit", "arguments": ""}})));
            for a in &args {
                out.push(ev(
                    "response.function_call_arguments.delta",
                    json!({"item_id": "fc_1", "output_index": 1, "delta": a}),
                ));
            }
            out.push(ev("response.output_item.done", json!({"output_index": 1, "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "edit", "arguments": args.concat()}})));
            out.push(ev("response.completed", json!({"response": {"id": "resp_1", "status": "completed", "output": [], "usage": {"input_tokens": 100, "output_tokens": 300}}})));
        }
    }
    out
}

fn per_frame(c: &mut Criterion) {
    let mut group = c.benchmark_group("translate_stream");
    for from in Format::ALL {
        let frames = frames(from);
        for to in Format::ALL.into_iter().filter(|t| *t != from) {
            group.throughput(Throughput::Elements(frames.len() as u64));
            group.bench_function(format!("{}_to_{}", from.as_str(), to.as_str()), |b| {
                b.iter(|| {
                    let cx = StreamContext { model: "m".into(), created: 1, chat_include_usage: true };
                    let mut t = StreamTranslator::new(from, to, cx);
                    let mut bytes = 0;
                    for f in &frames {
                        bytes += t.push(black_box(f.as_bytes())).len();
                    }
                    bytes += t.finish().map_or(0, |b| b.len());
                    black_box(bytes)
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, per_frame);
criterion_main!(benches);
