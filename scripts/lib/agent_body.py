"""The body of a chat request the size and shape of a coding agent's (~50 KB: a long
system prompt, 12 tools with JSON schemas, a history of tool calls and results full
of escapes; see CLIENTS.md), for the measurement scripts (KIND=agent), where the
gateway's cost that grows with the body shows. Prints it; `python3 agent_body.py`.
"""
import json
import sys


def agent_body():
    prose = "You are an interactive coding agent. Prefer small, verified edits; run the tests. " * 300
    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": "Reads or edits files. " * 20,
              "parameters": {"type": "object", "required": ["path"], "properties": {
                  "path": {"type": "string", "description": "Absolute path."},
                  "offset": {"type": "integer", "minimum": 0}, "limit": {"type": "integer"},
                  "edits": {"type": "array", "items": {"type": "object", "properties": {
                      "old": {"type": "string"}, "new": {"type": "string"}}}}}}}} for i in range(12)]
    history = []
    for i in range(8):
        history.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{i}", "type": "function",
                        "function": {"name": "tool_1", "arguments": json.dumps({"path": f"/src/mod{i}.rs"})}}]})
        history.append({"role": "tool", "tool_call_id": f"call_{i}",
                        "content": 'fn main() {\n    println!("hi");\n}\n' * 40})
    body = json.dumps({"model": "bench-model", "max_tokens": 64, "tools": tools, "messages": [
        {"role": "system", "content": prose}, {"role": "user", "content": "Fix the failing test."}] + history})
    return body


if __name__ == "__main__":
    sys.stdout.write(agent_body())
