//! Any agent on any connection: each of the six directions between Anthropic
//! Messages, Chat Completions and Responses, JSON and streamed, judged by the
//! official SDK of the client's format (`tests/python/judge.py`), with the fake
//! upstream checking it received a correct body in its own format.
//!
//! Scenarios: text with usage (cached tokens), a streamed tool call with split
//! arguments, the following tool-result turn, two parallel tool calls, reasoning, an
//! image, and every stop reason.

use serde_json::{Value, json};
use switchyard_testkit::scenario::{self, Call, Stop, Tokens, Turn};
use switchyard_testkit::{FakeUpstream, RecordedRequest, Reply};
use switchyard_tests::formats::{FORMATS, Fmt, fakes_and_gateway, one_connection_per_format};
use switchyard_tests::judge::{judge, sdk_python};
use switchyard_tests::{CLIENT_KEY, TestGateway};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scene {
    Text,
    ToolSplit,
    ToolResultTurn,
    Parallel,
    Thinking,
    Image,
    MaxTokens,
    StopSequence,
    Refusal,
    PauseTurn,
}

const SCENES: [Scene; 10] = [
    Scene::Text,
    Scene::ToolSplit,
    Scene::ToolResultTurn,
    Scene::Parallel,
    Scene::Thinking,
    Scene::Image,
    Scene::MaxTokens,
    Scene::StopSequence,
    Scene::Refusal,
    Scene::PauseTurn,
];

const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn call(id: &str, name: &str, chunks: &[&str]) -> Call {
    Call { id: id.into(), name: name.into(), chunks: chunks.iter().map(|c| (*c).to_owned()).collect() }
}

/// What the upstream of format `up` answers in `scene`.
fn turn(scene: Scene, up: Fmt) -> Turn {
    let usage = Tokens { input: 11, output: 7, cache_read: 3 };
    let text = |t: &[&str]| t.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>();
    let base =
        Turn { thinking: None, text: text(&["Hello", " there"]), calls: vec![], stop: Stop::EndTurn, usage };
    let id = |n: u8| match up {
        Fmt::Messages => format!("toolu_0{n}Abc"),
        _ => format!("call_{n}xyz"),
    };
    match scene {
        Scene::Text | Scene::Image | Scene::ToolResultTurn => base,
        Scene::ToolSplit => Turn {
            text: text(&["Let me look."]),
            calls: vec![call(&id(1), "get_weather", &["{\"city\": ", "\"Par", "is\", \"unit\": \"c\"}"])],
            stop: Stop::ToolUse,
            ..base
        },
        Scene::Parallel => Turn {
            text: vec![],
            calls: vec![
                call(&id(1), "read_file", &["{\"path\":", " \"a.txt\"}"]),
                call(&id(2), "read_file", &["{\"path\": \"b", ".txt\"}"]),
            ],
            stop: Stop::ToolUse,
            ..base
        },
        Scene::Thinking => Turn {
            thinking: Some((
                "The user adds two and two.".into(),
                match up {
                    Fmt::Messages => "EqQBCkYIBRgCIkB2c2lnbmF0dXJl".into(),
                    _ => "gAAAAABencrypted-reasoning".into(),
                },
            )),
            text: text(&["4"]),
            ..base
        },
        Scene::MaxTokens => Turn { text: text(&["Once upon a"]), stop: Stop::MaxTokens, ..base },
        Scene::StopSequence => {
            Turn { text: text(&["one, two"]), stop: Stop::StopSequence("three".into()), ..base }
        }
        Scene::Refusal => Turn { text: text(&["I can't help with that."]), stop: Stop::Refusal, ..base },
        Scene::PauseTurn => Turn { text: text(&["Still searching"]), stop: Stop::PauseTurn, ..base },
    }
}

fn reply(scene: Scene, up: Fmt, stream: bool) -> Reply {
    let t = turn(scene, up);
    let model = "model-1";
    match (up, stream) {
        (Fmt::Messages, false) => Reply::json(200, scenario::anthropic_json(&t, model)),
        (Fmt::Messages, true) => Reply::sse(scenario::anthropic_sse(&t, model)),
        (Fmt::Chat, false) => Reply::json(200, scenario::chat_json(&t, model)),
        (Fmt::Chat, true) => Reply::sse(scenario::chat_sse(&t, model)),
        (Fmt::Responses, false) => Reply::json(200, scenario::responses_json(&t, model)),
        (Fmt::Responses, true) => Reply::sse(scenario::responses_sse(&t, model)),
    }
}

fn weather_schema() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]})
}

fn file_schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
}

/// The client's request (without `model` and `stream`, which the judge sets).
fn request(scene: Scene, client: Fmt) -> Value {
    let question = match scene {
        Scene::ToolResultTurn => "What is the weather in Paris?",
        _ => "What is 2+2?",
    };
    let tools: Vec<(&str, Value)> = match scene {
        Scene::ToolSplit | Scene::ToolResultTurn => vec![("get_weather", weather_schema())],
        Scene::Parallel => vec![("read_file", file_schema())],
        _ => vec![],
    };
    match client {
        Fmt::Messages => {
            let mut user = json!([{"type": "text", "text": question}]);
            if scene == Scene::Image {
                user = json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                              {"type": "text", "text": "What is in this image?"}]);
            }
            let mut messages = vec![json!({"role": "user", "content": user})];
            if scene == Scene::ToolResultTurn {
                messages.push(json!({"role": "assistant", "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_prior1", "name": "get_weather", "input": {"city": "Paris"}}]}));
                messages.push(json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_prior1", "content": "18C and sunny"}]}));
            }
            let mut r = json!({"max_tokens": 1024, "system": "Be brief.", "messages": messages});
            if !tools.is_empty() {
                r["tools"] = tools
                    .iter()
                    .map(|(n, s)| json!({"name": n, "description": "a tool", "input_schema": s}))
                    .collect();
            }
            if scene == Scene::Thinking {
                r["max_tokens"] = json!(4096);
                r["thinking"] = json!({"type": "enabled", "budget_tokens": 2048});
            }
            if scene == Scene::StopSequence {
                r["stop_sequences"] = json!(["three"]);
            }
            r
        }
        Fmt::Chat => {
            let mut user = json!(question);
            if scene == Scene::Image {
                user = json!([{"type": "text", "text": "What is in this image?"},
                              {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}]);
            }
            let mut messages = vec![
                json!({"role": "system", "content": "Be brief."}),
                json!({"role": "user", "content": user}),
            ];
            if scene == Scene::ToolResultTurn {
                messages.push(json!({"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "call_prior1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}));
                messages
                    .push(json!({"role": "tool", "tool_call_id": "call_prior1", "content": "18C and sunny"}));
            }
            let mut r = json!({"messages": messages, "max_completion_tokens": 1024});
            if !tools.is_empty() {
                r["tools"] = tools
                    .iter()
                    .map(|(n, s)| json!({"type": "function", "function": {"name": n, "description": "a tool", "parameters": s}}))
                    .collect();
            }
            if scene == Scene::Thinking {
                r["reasoning_effort"] = json!("low");
                r["max_completion_tokens"] = json!(4096);
            }
            if scene == Scene::StopSequence {
                r["stop"] = json!(["three"]);
            }
            r
        }
        Fmt::Responses => {
            let mut content = json!([{"type": "input_text", "text": question}]);
            if scene == Scene::Image {
                content = json!([{"type": "input_text", "text": "What is in this image?"},
                                 {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG}")}]);
            }
            let mut input = vec![json!({"role": "user", "content": content})];
            if scene == Scene::ToolResultTurn {
                input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]}));
                input.push(json!({"type": "function_call", "call_id": "call_prior1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}));
                input.push(json!({"type": "function_call_output", "call_id": "call_prior1", "output": "18C and sunny"}));
            }
            let mut r = json!({"instructions": "Be brief.", "input": input, "max_output_tokens": 1024});
            if !tools.is_empty() {
                r["tools"] = tools
                    .iter()
                    .map(|(n, s)| json!({"type": "function", "name": n, "description": "a tool", "parameters": s}))
                    .collect();
            }
            if scene == Scene::Thinking {
                r["reasoning"] = json!({"effort": "low"});
                r["max_output_tokens"] = json!(4096);
            }
            r
        }
    }
}

/// The stop as the client's SDK reports it.
fn expected_stop(scene: Scene, up: Fmt, client: Fmt) -> (&'static str, Option<&'static str>) {
    let stop = turn(scene, up).stop;
    // Chat and Responses cannot say that a stop sequence matched, nor that a turn
    // paused: they say "stop".
    let stop = match (&stop, up) {
        (Stop::StopSequence(_) | Stop::PauseTurn, Fmt::Chat | Fmt::Responses) => Stop::EndTurn,
        _ => stop,
    };
    match client {
        Fmt::Messages => (
            match stop {
                Stop::EndTurn => "end_turn",
                Stop::MaxTokens => "max_tokens",
                Stop::ToolUse => "tool_use",
                Stop::StopSequence(_) => "stop_sequence",
                Stop::Refusal => "refusal",
                Stop::PauseTurn => "pause_turn",
            },
            None,
        ),
        Fmt::Chat => (
            match stop {
                Stop::EndTurn | Stop::StopSequence(_) | Stop::PauseTurn => "stop",
                Stop::MaxTokens => "length",
                Stop::ToolUse => "tool_calls",
                Stop::Refusal => "content_filter",
            },
            None,
        ),
        Fmt::Responses => match stop {
            Stop::MaxTokens => ("incomplete", Some("max_output_tokens")),
            Stop::Refusal => ("incomplete", Some("content_filter")),
            _ => ("completed", None),
        },
    }
}

struct Case {
    name: String,
    scene: Scene,
    up: Fmt,
    client: Fmt,
    stream: bool,
}

/// Checks the body the upstream of format `up` received for `case`.
fn check_upstream_body(case: &Case, r: &RecordedRequest) {
    let name = &case.name;
    let b = r.json();
    assert_eq!(r.path, case.up.path(), "{name}");
    assert_eq!(b["model"], "model-1", "{name}: {b}");
    assert_eq!(b["stream"].as_bool().unwrap_or(false), case.stream, "{name}: {b}");
    assert!(
        r.header("authorization").is_some_and(|a| !a.contains(CLIENT_KEY)) || r.header("x-api-key").is_some(),
        "{name}"
    );
    let text = b.to_string();
    match case.up {
        Fmt::Messages => {
            assert_eq!(b["system"][0]["text"], "Be brief.", "{name}: {b}");
            assert!(b["max_tokens"].as_u64().is_some_and(|n| n > 0), "{name}: {b}");
            assert_eq!(b["messages"][0]["role"], "user", "{name}: {b}");
        }
        Fmt::Chat => {
            assert_eq!(b["messages"][0], json!({"role": "system", "content": "Be brief."}), "{name}: {b}");
            if case.stream {
                assert_eq!(b["stream_options"]["include_usage"], true, "{name}: {b}");
            }
        }
        Fmt::Responses => {
            assert_eq!(b["instructions"], "Be brief.", "{name}: {b}");
            assert_eq!(b["store"], false, "{name}: {b}");
            assert!(b["input"].is_array(), "{name}: {b}");
        }
    }
    match case.scene {
        Scene::Image => match case.up {
            Fmt::Messages => {
                let img = &b["messages"][0]["content"]
                    .as_array()
                    .and_then(|c| c.iter().find(|p| p["type"] == "image").cloned());
                assert_eq!(
                    img.as_ref().map(|i| i["source"].clone()),
                    Some(json!({"type": "base64", "media_type": "image/png", "data": PNG})),
                    "{name}: {b}"
                );
            }
            Fmt::Chat => {
                assert!(text.contains(&format!("\"url\":\"data:image/png;base64,{PNG}\"")), "{name}: {b}")
            }
            Fmt::Responses => assert!(
                text.contains(&format!("\"image_url\":\"data:image/png;base64,{PNG}\""))
                    && text.contains("input_image"),
                "{name}: {b}"
            ),
        },
        Scene::ToolResultTurn => {
            let prior = match case.client {
                Fmt::Messages => "toolu_prior1",
                _ => "call_prior1",
            };
            match case.up {
                Fmt::Messages => {
                    let m = &b["messages"];
                    assert_eq!(m[1]["content"][1]["type"], "tool_use", "{name}: {b}");
                    assert_eq!(m[1]["content"][1]["id"], prior, "{name}: {b}");
                    assert_eq!(m[1]["content"][1]["input"], json!({"city": "Paris"}), "{name}: {b}");
                    assert_eq!(m[2]["content"][0]["type"], "tool_result", "{name}: {b}");
                    assert_eq!(m[2]["content"][0]["tool_use_id"], prior, "{name}: {b}");
                    assert!(m[2]["content"][0].to_string().contains("18C and sunny"), "{name}: {b}");
                }
                Fmt::Chat => {
                    let m = &b["messages"];
                    assert_eq!(m[2]["tool_calls"][0]["id"], prior, "{name}: {b}");
                    assert_eq!(m[2]["tool_calls"][0]["function"]["name"], "get_weather", "{name}: {b}");
                    let args: Value = serde_json::from_str(
                        m[2]["tool_calls"][0]["function"]["arguments"].as_str().unwrap_or(""),
                    )
                    .unwrap_or_default();
                    assert_eq!(args, json!({"city": "Paris"}), "{name}: {b}");
                    assert_eq!(
                        m[3],
                        json!({"role": "tool", "tool_call_id": prior, "content": "18C and sunny"}),
                        "{name}: {b}"
                    );
                }
                Fmt::Responses => {
                    let items = b["input"].as_array().cloned().unwrap_or_default();
                    let fc = items.iter().find(|i| i["type"] == "function_call").cloned().unwrap_or_default();
                    let out = items
                        .iter()
                        .find(|i| i["type"] == "function_call_output")
                        .cloned()
                        .unwrap_or_default();
                    assert_eq!(fc["call_id"], prior, "{name}: {b}");
                    assert_eq!(out["call_id"], prior, "{name}: {b}");
                    assert_eq!(out["output"], "18C and sunny", "{name}: {b}");
                }
            }
        }
        Scene::ToolSplit | Scene::Parallel => {
            let tool = match case.up {
                Fmt::Messages => b["tools"][0]["input_schema"].clone(),
                Fmt::Chat => b["tools"][0]["function"]["parameters"].clone(),
                Fmt::Responses => b["tools"][0]["parameters"].clone(),
            };
            assert!(tool["properties"].is_object(), "{name}: {b}");
        }
        Scene::Thinking => match case.up {
            Fmt::Messages => assert_eq!(b["thinking"]["type"], "enabled", "{name}: {b}"),
            Fmt::Responses => assert!(b["reasoning"]["effort"].is_string(), "{name}: {b}"),
            // An OpenAI-compatible server is not sent a reasoning field it may refuse.
            Fmt::Chat => assert!(b.get("reasoning_effort").is_none(), "{name}: {b}"),
        },
        // Responses has no stop sequences to send (nor to translate from).
        Scene::StopSequence => match (case.client, case.up) {
            (Fmt::Responses, _) | (_, Fmt::Responses) => assert!(!text.contains("three"), "{name}: {b}"),
            (_, Fmt::Messages) => assert_eq!(b["stop_sequences"], json!(["three"]), "{name}: {b}"),
            (_, Fmt::Chat) => assert_eq!(b["stop"], json!(["three"]), "{name}: {b}"),
        },
        _ => {}
    }
}

/// Checks what the client's SDK parsed for `case`.
fn check_result(case: &Case, res: &Value) {
    let name = &case.name;
    assert_eq!(res["ok"], true, "{name}: the SDK failed: {res}");
    let r = &res["result"];
    let t = turn(case.scene, case.up);
    assert_eq!(
        r["model"],
        format!("{}/model-1", case.up.provider()),
        "{name}: the model echoes the client's: {r}"
    );
    assert_eq!(r["text"], t.full_text(), "{name}: {r}");
    let calls: Vec<Value> = t
        .calls
        .iter()
        .map(|c| json!({"id": c.id, "name": c.name, "arguments": serde_json::from_str::<Value>(&c.arguments()).unwrap_or_default()}))
        .collect();
    assert_eq!(r["tool_calls"], json!(calls), "{name}: {r}");
    if let Some((text, proof)) = &t.thinking {
        assert_eq!(r["thinking"][0]["text"], text.as_str(), "{name}: {r}");
        if case.client == Fmt::Messages {
            // A proof Anthropic did not issue travels as a marker, never as a
            // signature Anthropic would reject as forged.
            let sig = r["thinking"][0]["signature"].as_str().unwrap_or_default();
            assert!(sig.starts_with("swy1.") && sig != proof, "{name}: {r}");
        }
    } else {
        assert_eq!(r["thinking"], json!([]), "{name}: {r}");
    }
    let (stop, incomplete) = expected_stop(case.scene, case.up, case.client);
    assert_eq!(r["stop"], stop, "{name}: {r}");
    if case.client == Fmt::Responses {
        assert_eq!(r["incomplete"], json!(incomplete), "{name}: {r}");
    }
    // Cached tokens keep their meaning: Anthropic's input excludes them, OpenAI's
    // includes them.
    let u = &r["usage"];
    match case.client {
        Fmt::Messages => {
            assert_eq!((u["input"].as_u64(), u["cache_read"].as_u64()), (Some(11), Some(3)), "{name}: {r}");
        }
        Fmt::Chat | Fmt::Responses => {
            assert_eq!((u["input"].as_u64(), u["cache_read"].as_u64()), (Some(14), Some(3)), "{name}: {r}");
        }
    }
    assert_eq!(u["output"].as_u64(), Some(7), "{name}: {r}");
}

#[tokio::test]
async fn six_directions_judged_by_the_official_sdks() {
    let Some(python) = sdk_python() else { return };
    let (fakes, gw) = fakes_and_gateway().await;

    let mut cases = Vec::new();
    for scene in SCENES {
        for client in FORMATS {
            for up in FORMATS {
                if up == client {
                    continue;
                }
                for stream in [false, true] {
                    let name = format!(
                        "{scene:?} {}→{} {}",
                        client.name(),
                        up.name(),
                        if stream { "stream" } else { "json" }
                    );
                    cases.push(Case { name, scene, up, client, stream });
                }
            }
        }
    }
    let mut batch = Vec::new();
    for case in &cases {
        let fake = &fakes.iter().find(|(f, _)| *f == case.up).unwrap_or_else(|| panic!("fake")).1;
        fake.push(reply(case.scene, case.up, case.stream));
        batch.push(json!({
            "name": case.name,
            "client": case.client.name(),
            "base_url": gw.gateway().base_url(),
            "api_key": CLIENT_KEY,
            "model": format!("{}/model-1", case.up.provider()),
            "stream": case.stream,
            "request": request(case.scene, case.client),
        }));
    }
    let results = judge(&python, &batch).await;
    let mut seen: Vec<(Fmt, usize)> = FORMATS.iter().map(|f| (*f, 0)).collect();
    let mut failures = Vec::new();
    for (case, res) in cases.iter().zip(&results) {
        let check = std::panic::catch_unwind(|| check_result(case, res));
        let fake = &fakes.iter().find(|(f, _)| *f == case.up).unwrap_or_else(|| panic!("fake")).1;
        let slot = seen.iter_mut().find(|(f, _)| *f == case.up).unwrap_or_else(|| panic!("slot"));
        let request = fake.requests().get(slot.1).cloned();
        slot.1 += 1;
        let body_check = std::panic::catch_unwind(|| match &request {
            Some(r) => check_upstream_body(case, r),
            None => panic!("{}: the upstream received nothing", case.name),
        });
        for outcome in [check, body_check] {
            if let Err(e) = outcome {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()));
                failures.push(msg.unwrap_or_default());
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} checks failed:\n{}",
        failures.len(),
        cases.len() * 2,
        failures.join("\n\n")
    );
}

#[tokio::test]
async fn a_combo_fails_over_across_all_three_formats_invisibly_to_a_streaming_client() {
    let Some(python) = sdk_python() else { return };
    let account = FakeUpstream::start(Reply::json(
        503,
        switchyard_testkit::wire::anthropic_error("overloaded_error", "busy"),
    ))
    .await;
    let glm =
        FakeUpstream::start(Reply::json(500, switchyard_testkit::wire::openai_error("server_error", "boom")))
            .await;
    let served = Turn {
        thinking: None,
        text: vec!["Served by".into(), " the third".into()],
        calls: vec![],
        stop: Stop::EndTurn,
        usage: Tokens { input: 5, output: 3, cache_read: 0 },
    };
    let openai = FakeUpstream::start(Reply::sse(scenario::responses_sse(&served, "gpt-5"))).await;
    let config = format!(
        "{}\n[[connections]]\nid = \"claude-a\"\nprovider = \"anthropic\"\nauth = \"oauth\"\naccess_token = \"oat-a\"\nbase_url = \"{}\"\n\
         \n[[connections]]\nid = \"glm-key\"\nprovider = \"glm\"\napi_format = \"openai-chat\"\napi_key = \"sk-glm\"\nbase_url = \"{}/v1\"\n\
         \n[[connections]]\nid = \"openai-key\"\nprovider = \"openai\"\napi_format = \"openai-responses\"\napi_key = \"sk-oai\"\nbase_url = \"{}/v1\"\n\
         \n[[combos]]\nname = \"coding\"\nstrategy = \"priority\"\ntargets = [{{ model = \"anthropic/claude-sonnet-4-6\" }}, {{ model = \"glm/glm-4.6\" }}, {{ model = \"openai/gpt-5\" }}]\n",
        switchyard_tests::client_key_toml(),
        account.url(),
        glm.url(),
        openai.url()
    );
    let gw = TestGateway::start(&config).await;
    let clear = json!({"url": gw.url("/api/resilience/cooldowns"), "json": {"all": true}, "token": switchyard_tests::MANAGEMENT_TOKEN});
    let batch: Vec<Value> = FORMATS
        .iter()
        .map(|client| {
            json!({"name": client.name(), "client": client.name(), "base_url": gw.gateway().base_url(),
                   "api_key": CLIENT_KEY, "model": "coding", "stream": true, "request": request(Scene::Text, *client),
                   "before": clear})
        })
        .collect();
    let results = judge(&python, &batch).await;
    for (client, res) in FORMATS.iter().zip(&results) {
        assert_eq!(res["ok"], true, "{client:?}: {res}");
        assert_eq!(res["result"]["text"], "Served by the third", "{client:?}: {res}");
        // Translated answers echo the client's model; the Responses client's own
        // format was relayed byte for byte.
        let model = if *client == Fmt::Responses { "gpt-5" } else { "coding" };
        assert_eq!(res["result"]["model"], model, "{client:?}: {res}");
    }
    // Each client format went down the same chain, each hop in that hop's own format.
    for (fake, path, model) in [
        (&account, "/v1/messages", "claude-sonnet-4-6"),
        (&glm, "/v1/chat/completions", "glm-4.6"),
        (&openai, "/v1/responses", "gpt-5"),
    ] {
        let seen = fake.requests();
        assert_eq!(seen.len(), 3, "{path}: {:?}", seen.iter().map(|r| r.path.clone()).collect::<Vec<_>>());
        for r in seen {
            assert_eq!(r.path, path);
            assert_eq!(r.json()["model"], model);
            assert_eq!(r.json()["stream"], true);
        }
    }
}

#[tokio::test]
async fn a_same_format_request_is_byte_identical_at_the_upstream() {
    // Next to connections of other formats, a Messages client on an Anthropic
    // connection is relayed byte for byte: cache_control, unknown fields, thinking
    // signatures and the billing header untouched, query string kept.
    let fake = FakeUpstream::start(Reply::sse(switchyard_testkit::wire::anthropic_sse("m", "hi"))).await;
    let others = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let gw = TestGateway::start(&one_connection_per_format(&[
        (Fmt::Messages, fake.url()),
        (Fmt::Chat, others.url()),
        (Fmt::Responses, others.url()),
    ]))
    .await;
    let body = r#"{"model":"up-messages/model-1","max_tokens":64,"stream":true,"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1; cch=1;"},{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}}]},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"EqQBsig"}]}],"context_management":{"edits":[]},"x_future_field":[1,2.50,"three"]}"#;
    let response = gw
        .http
        .post(gw.url("/v1/messages?beta=true"))
        .bearer_auth(CLIENT_KEY)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    let _ = response.text().await;
    let seen = fake.last_request().unwrap_or_else(|| panic!("no request"));
    let expected = body.replace("\"up-messages/model-1\"", "\"model-1\"");
    assert_eq!(String::from_utf8_lossy(&seen.body), expected);
    assert_eq!(seen.query.as_deref(), Some("beta=true"));
    assert_eq!(others.calls(), 0);
}

#[tokio::test]
async fn long_context_ids_are_listed_and_routed_with_the_context_beta() {
    let fake = FakeUpstream::start(Reply::sse(switchyard_testkit::wire::anthropic_sse("m", "hi"))).await;
    let config = format!(
        "{}\n[[connections]]\nid = \"claude-key\"\nprovider = \"anthropic\"\napi_key = \"sk-ant\"\nbase_url = \"{}\"\nmodels = [\"claude-sonnet-4-6\", \"claude-haiku-4-5\"]\n",
        switchyard_tests::client_key_toml(),
        fake.url()
    );
    let gw = TestGateway::start(&config).await;
    let listed = gw
        .http
        .get(gw.url("/v1/models"))
        .bearer_auth(CLIENT_KEY)
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let listed: Value = listed.json().await.unwrap_or_default();
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .map(|d| d.iter().filter_map(|m| m["id"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        ids.contains(&"claude-sonnet-4-6[1m]") && ids.contains(&"anthropic/claude-sonnet-4-6[1m]"),
        "{ids:?}"
    );
    assert!(!ids.contains(&"claude-haiku-4-5[1m]"), "{ids:?}");
    let openai_shape: Value = gw
        .http
        .get(gw.url("/v1/models"))
        .bearer_auth(CLIENT_KEY)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or_default();
    assert_eq!(openai_shape["object"], "list");

    let response = gw
        .post("/v1/messages", &json!({"model": "claude-sonnet-4-6[1m]", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}))
        .await;
    assert_eq!(response.status(), 200);
    let seen = fake.last_request().unwrap_or_else(|| panic!("no request"));
    assert_eq!(seen.json()["model"], "claude-sonnet-4-6");
    assert!(
        seen.header("anthropic-beta").is_some_and(|b| b.contains("context-1m-2025-08-07")),
        "{:?}",
        seen.headers
    );
}

#[tokio::test]
async fn count_tokens_is_estimated_when_no_anthropic_connection_can_count() {
    let fake = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let gw = TestGateway::start(&one_connection_per_format(&[(Fmt::Chat, fake.url())])).await;
    let text = "x".repeat(400);
    let response = gw
        .post(
            "/v1/messages/count_tokens",
            &json!({"model": "up-chat/model-1", "system": "abcd", "messages": [{"role": "user", "content": text}]}),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers().get("x-switchyard-token-estimate").and_then(|v| v.to_str().ok()),
        Some("chars/4")
    );
    let body: Value = response.json().await.unwrap_or_default();
    // 4 + 400 characters (roles and types are not text) → 101 tokens.
    assert_eq!(body, json!({"input_tokens": 101}));
    assert_eq!(fake.calls(), 0);
}

#[tokio::test]
async fn rate_limit_headers_reach_clients_of_other_formats() {
    // Claude Code's and Codex's usage warnings read these from the answer's headers.
    let anthropic = FakeUpstream::start(
        Reply::sse(switchyard_testkit::wire::anthropic_sse("m", "hi"))
            .with_header("anthropic-ratelimit-unified-5h-utilization", "0.42")
            .with_header("anthropic-ratelimit-requests-remaining", "99"),
    )
    .await;
    let chat = FakeUpstream::start(
        Reply::json(200, switchyard_testkit::wire::chat_completion("m", "hi"))
            .with_header("x-ratelimit-remaining-tokens", "12345")
            .with_header("x-codex-primary-used-percent", "17"),
    )
    .await;
    let gw = TestGateway::start(&one_connection_per_format(&[
        (Fmt::Messages, anthropic.url()),
        (Fmt::Chat, chat.url()),
    ]))
    .await;
    let to_anthropic =
        gw.post("/v1/responses", &json!({"model": "up-messages/m", "input": "hi", "stream": true})).await;
    assert_eq!(to_anthropic.status(), 200);
    let h = to_anthropic.headers().clone();
    assert_eq!(
        h.get("anthropic-ratelimit-unified-5h-utilization").and_then(|v| v.to_str().ok()),
        Some("0.42")
    );
    assert_eq!(h.get("anthropic-ratelimit-requests-remaining").and_then(|v| v.to_str().ok()), Some("99"));
    assert!(to_anthropic.text().await.unwrap_or_default().contains("response.completed"));
    let to_chat = gw
        .post(
            "/v1/messages",
            &json!({"model": "up-chat/m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(to_chat.status(), 200);
    let h = to_chat.headers().clone();
    assert_eq!(h.get("x-ratelimit-remaining-tokens").and_then(|v| v.to_str().ok()), Some("12345"));
    assert_eq!(h.get("x-codex-primary-used-percent").and_then(|v| v.to_str().ok()), Some("17"));
    let body: Value = to_chat.json().await.unwrap_or_default();
    assert_eq!(body["type"], "message");
    assert_eq!(body["content"][0]["text"], "hi");
}

#[tokio::test]
async fn a_streaming_client_gets_a_stream_when_the_upstream_answers_whole() {
    // Some servers ignore `stream: true`; the client still gets its own stream format.
    let fake = FakeUpstream::start(Reply::json(
        200,
        switchyard_testkit::wire::anthropic_message("m", "whole answer"),
    ))
    .await;
    let gw = TestGateway::start(&one_connection_per_format(&[(Fmt::Messages, fake.url())])).await;
    let response = gw
        .post("/v1/chat/completions", &json!({"model": "up-messages/m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}))
        .await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap_or_default().starts_with("text/event-stream"));
    let text = response.text().await.unwrap_or_default();
    let chunks = switchyard_tests::sse_data(&text);
    let content: String =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(content, "whole answer", "{text}");
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
}

#[tokio::test]
async fn a_plain_client_gets_one_answer_when_the_upstream_streams_anyway() {
    let fake =
        FakeUpstream::start(Reply::sse(switchyard_testkit::wire::anthropic_sse("m", "streamed anyway")))
            .await;
    let gw = TestGateway::start(&one_connection_per_format(&[(Fmt::Messages, fake.url())])).await;
    let response = gw.post("/v1/responses", &json!({"model": "up-messages/m", "input": "hi"})).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap_or_default().starts_with("application/json"));
    let body: Value = response.json().await.unwrap_or_default();
    assert_eq!(body["object"], "response", "{body}");
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(body["output"][0]["content"][0]["text"], "streamed anyway", "{body}");
    assert_eq!(body["model"], "up-messages/m");
}

#[tokio::test]
async fn a_session_that_moves_back_to_anthropic_never_replays_reasoning_anthropic_did_not_sign() {
    // Turn 1 is served by a Chat upstream with reasoning; Claude Code keeps the
    // thinking block it was shown. Turn 2 goes to Anthropic natively: that block
    // must not arrive (Anthropic rejects a signature it did not issue).
    let reasoning = Turn {
        thinking: Some(("Let me think.".into(), String::new())),
        text: vec!["Four.".into()],
        calls: vec![],
        stop: Stop::EndTurn,
        usage: Tokens::default(),
    };
    let chat = FakeUpstream::start(Reply::json(200, scenario::chat_json(&reasoning, "glm-4.6"))).await;
    let anthropic =
        FakeUpstream::start(Reply::json(200, switchyard_testkit::wire::anthropic_message("m", "ok"))).await;
    let gw = TestGateway::start(&one_connection_per_format(&[
        (Fmt::Messages, anthropic.url()),
        (Fmt::Chat, chat.url()),
    ]))
    .await;
    let first = gw
        .post("/v1/messages", &json!({"model": "up-chat/glm-4.6", "max_tokens": 100, "messages": [{"role": "user", "content": "2+2?"}]}))
        .await;
    let first: Value = first.json().await.unwrap_or_default();
    let shown = first["content"][0].clone();
    assert_eq!(shown["type"], "thinking", "{first}");
    let second = json!({"model": "up-messages/claude-x", "max_tokens": 100, "messages": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": [shown, {"type": "text", "text": "Four."}]},
        {"role": "user", "content": "and 3+3?"}]});
    assert_eq!(gw.post("/v1/messages", &second).await.status(), 200);
    let seen = anthropic.last_request().unwrap_or_else(|| panic!("no request")).json();
    assert_eq!(seen["messages"][1]["content"], json!([{"type": "text", "text": "Four."}]), "{seen}");
    assert_eq!(seen["model"], "claude-x");
}

#[tokio::test]
async fn an_openai_compatible_server_is_not_sent_openais_own_fields() {
    let fake =
        FakeUpstream::start(Reply::json(200, switchyard_testkit::wire::chat_completion("m", "ok"))).await;
    let config = format!(
        "{}\n[[connections]]\nid = \"vllm\"\nprovider = \"openai-compatible\"\napi_key = \"sk-v\"\nbase_url = \"{}/v1\"\n",
        switchyard_tests::client_key_toml(),
        fake.url()
    );
    let gw = TestGateway::start(&config).await;
    let body = json!({"model": "openai-compatible/m", "max_tokens": 77, "thinking": {"type": "enabled", "budget_tokens": 4096},
                      "metadata": {"user_id": "session-1"}, "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(gw.post("/v1/messages", &body).await.status(), 200);
    let seen = fake.last_request().unwrap_or_else(|| panic!("no request")).json();
    assert_eq!(seen["max_tokens"], 77, "{seen}");
    for field in ["max_completion_tokens", "reasoning_effort", "prompt_cache_key"] {
        assert!(seen.get(field).is_none(), "{field}: {seen}");
    }
}
