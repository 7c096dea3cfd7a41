"""Runs requests through the gateway with the official SDK of each client format and
prints what the SDK parsed, normalised, as JSON (one result per case, in order).

The SDK is the judge: its own stream accumulators (`messages.stream`,
`chat.completions.stream`, `responses.stream`) reject events out of order, unknown
block indexes, malformed JSON and the like. A case fails with the SDK's exception
text; the Rust test asserts on the normalised result.

usage: python judge.py CASES.json   (a JSON array of cases; see tests/tests/translation.rs)
"""

import json
import sys
import traceback

import urllib.request

import anthropic
import openai
from openai.lib.streaming.chat import ChatCompletionStreamState


def args(text):
    """Tool arguments as JSON, or the raw text when a cut-off answer left them unfinished."""
    try:
        return json.loads(text or "{}")
    except ValueError:
        return {"_unparsed": text}


def dump(obj):
    return json.loads(obj.model_dump_json()) if hasattr(obj, "model_dump_json") else obj


def messages_case(case):
    client = anthropic.Anthropic(base_url=case["base_url"], api_key=case["api_key"], max_retries=0, timeout=30)
    req = dict(case["request"])
    req["model"] = case["model"]
    if case["stream"]:
        with client.messages.stream(**req) as s:
            events = [e.type for e in s]
            msg = s.get_final_message()
    else:
        events = []
        msg = client.messages.create(**req)
    text = "".join(b.text for b in msg.content if b.type == "text")
    tools = [{"id": b.id, "name": b.name, "arguments": b.input} for b in msg.content if b.type == "tool_use"]
    thinking = [{"text": b.thinking, "signature": b.signature} for b in msg.content if b.type == "thinking"]
    redacted = [b.data for b in msg.content if b.type == "redacted_thinking"]
    u = msg.usage
    return {
        "id": msg.id,
        "model": msg.model,
        "text": text,
        "tool_calls": tools,
        "thinking": thinking,
        "redacted": redacted,
        "stop": msg.stop_reason,
        "stop_sequence": msg.stop_sequence,
        "usage": {
            "input": u.input_tokens,
            "output": u.output_tokens,
            "cache_read": u.cache_read_input_tokens or 0,
            "cache_write": u.cache_creation_input_tokens or 0,
        },
        "events": events,
    }


def chat_case(case):
    client = openai.OpenAI(base_url=case["base_url"] + "/v1", api_key=case["api_key"], max_retries=0, timeout=30)
    req = dict(case["request"])
    req["model"] = case["model"]
    if case["stream"]:
        # The SDK's own accumulator (what `chat.completions.stream` uses), without
        # that helper's refusal to return a `length` or `content_filter` answer.
        req.setdefault("stream_options", {"include_usage": True})
        state = ChatCompletionStreamState()
        events = []
        for chunk in client.chat.completions.create(stream=True, **req):
            events.extend(e.type for e in state.handle_chunk(chunk))
        comp = state.current_completion_snapshot
    else:
        events = []
        comp = client.chat.completions.create(**req)
    choice = comp.choices[0]
    m = choice.message
    extra = dump(m)
    tools = [
        {"id": t.id, "name": t.function.name, "arguments": args(t.function.arguments)}
        for t in (m.tool_calls or [])
    ]
    u = comp.usage
    return {
        "id": comp.id,
        "model": comp.model,
        "text": m.content or "",
        "tool_calls": tools,
        "thinking": [{"text": extra["reasoning_content"]}] if extra.get("reasoning_content") else [],
        "stop": choice.finish_reason,
        "usage": None
        if u is None
        else {
            "input": u.prompt_tokens,
            "output": u.completion_tokens,
            "cache_read": (u.prompt_tokens_details.cached_tokens or 0) if u.prompt_tokens_details else 0,
        },
        "events": events,
    }


def responses_case(case):
    client = openai.OpenAI(base_url=case["base_url"] + "/v1", api_key=case["api_key"], max_retries=0, timeout=30)
    req = dict(case["request"])
    req["model"] = case["model"]
    if case["stream"]:
        # The SDK's stream accumulator checks every event; it only hands out a final
        # response for `response.completed`, so an incomplete one is taken from its event.
        events, r = [], None
        with client.responses.stream(**req) as s:
            for e in s:
                events.append(e.type)
                if e.type == "response.incomplete":
                    r = e.response
                if e.type in ("error", "response.failed"):
                    # How a Responses stream reports an API error: as typed events.
                    raise ReportedError(f"{e.type}: {dump(e)}")
            if r is None:
                r = s.get_final_response()
    else:
        events = []
        r = client.responses.create(**req)
    tools = [
        {"id": i.call_id, "name": i.name, "arguments": args(i.arguments)}
        for i in r.output
        if i.type == "function_call"
    ]
    thinking = [
        {"text": "\n\n".join(s.text for s in i.summary), "signature": i.encrypted_content}
        for i in r.output
        if i.type == "reasoning"
    ]
    u = r.usage
    return {
        "id": r.id,
        "model": r.model,
        "text": r.output_text,
        "tool_calls": tools,
        "thinking": thinking,
        "stop": r.status,
        "incomplete": r.incomplete_details.reason if r.incomplete_details else None,
        "usage": None
        if u is None
        else {
            "input": u.input_tokens,
            "output": u.output_tokens,
            "cache_read": u.input_tokens_details.cached_tokens if u.input_tokens_details else 0,
        },
        "events": events,
    }


class ReportedError(Exception):
    """An error the API reported inside a stream, as the SDK surfaced it."""


RUNNERS = {"messages": messages_case, "chat": chat_case, "responses": responses_case}


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    out = []
    for case in cases:
        before = case.get("before")
        if before:
            # A management call the test wants made first (e.g. clearing the
            # cooldown the previous case's provider error rightly caused).
            call = urllib.request.Request(
                before["url"], data=json.dumps(before["json"]).encode(), method="POST",
                headers={"Authorization": f"Bearer {before['token']}", "Content-Type": "application/json"})
            with urllib.request.urlopen(call, timeout=10) as answer:
                assert answer.status == 200, answer.status
        try:
            out.append({"name": case["name"], "ok": True, "result": RUNNERS[case["client"]](case)})
        except (openai.APIStatusError, anthropic.APIStatusError) as e:
            out.append({"name": case["name"], "ok": False, "api_error": True, "status": e.status_code,
                        "error": str(e), "body": e.body})
        except Exception as e:  # noqa: BLE001 - any SDK failure is the verdict
            # An error the API reported in a stream is an API error too (the SDKs raise
            # their base APIError for it); anything else is a parse failure.
            reported = type(e) in (openai.APIError, anthropic.APIError, ReportedError)
            out.append({"name": case["name"], "ok": False, "api_error": reported, "status": None,
                        "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
