#!/usr/bin/env bash
# Does a gateway binary reach upstreams over TLS? A check for rewritten binaries
# (scripts/lib/bolt-layout.sh): the benchmark's upstreams are plain HTTP, so nothing
# else exercises the TLS stack (rustls on aws-lc, much of it hand-written assembly).
#
#   bash scripts/lib/tls-smoke.sh GATEWAY_BIN
#
# Makes a throwaway CA (P-256) and a server certificate for 127.0.0.1 (RSA 2048, so
# both signature kinds are verified), serves a chat completion over TLS 1.3 and over
# TLS 1.2 from two Python servers on loopback, points the gateway at both with the CA
# trusted through SSL_CERT_FILE (the platform store's override), and sends one
# request through each. Needs openssl and python3; without them it says so and
# passes (exit 0), since it only guards an optional build step.
set -euo pipefail
bin=$1
for tool in openssl python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "tls-smoke: skipped (no $tool)"; exit 0; }
done
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
cd "$work"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
  -days 2 -subj "/CN=switchyard tls-smoke CA" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 \
  -extfile server.ext 2>/dev/null

cat >upstream.py <<'PY'
import http.server, json, ssl, sys
class Answer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({"id": "chatcmpl-smoke", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "tls ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args): pass
server = http.server.HTTPServer(("127.0.0.1", 0), Answer)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.minimum_version = context.maximum_version = getattr(ssl.TLSVersion, sys.argv[2])
context.load_cert_chain("server.pem", "server.key")
server.socket = context.wrap_socket(server.socket, server_side=True)
open(sys.argv[1], "w").write(str(server.server_address[1]))
server.serve_forever()
PY
python3 upstream.py port13 TLSv1_3 & pids+=($!)
python3 upstream.py port12 TLSv1_2 & pids+=($!)
for _ in $(seq 50); do [ -s port13 ] && [ -s port12 ] && break; sleep 0.1; done
[ -s port13 ] && [ -s port12 ] ||
  { echo "tls-smoke: the TLS upstreams did not start (Python's ssl without TLS 1.2 or 1.3?)" >&2; exit 1; }
listen=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >gateway.toml <<TOML
[[api_keys]]
name = "smoke"
key = "sk-tls-smoke-client-key-0123456789"

[[connections]]
id = "tls13"
provider = "tls13"
api_format = "openai"
api_key = "upstream-key"
base_url = "https://127.0.0.1:$(cat port13)/v1"
models = ["smoke-tls13"]

[[connections]]
id = "tls12"
provider = "tls12"
api_format = "openai"
api_key = "upstream-key"
base_url = "https://127.0.0.1:$(cat port12)/v1"
models = ["smoke-tls12"]
TOML
mkdir data
SSL_CERT_FILE="$work/ca.pem" "$bin" serve --data-dir data --config gateway.toml --listen "127.0.0.1:$listen" \
  --huge-text false >gateway.log 2>&1 & pids+=($!)
python3 - "$listen" <<'PY' || { cat gateway.log >&2; exit 1; }
import http.client, json, sys, time
port = int(sys.argv[1])
for _ in range(100):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10); conn.connect(); break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("tls-smoke: the gateway did not listen")
for model in ("smoke-tls13", "smoke-tls12"):
    conn.request("POST", "/v1/chat/completions",
                 json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]}),
                 {"content-type": "application/json", "authorization": "Bearer sk-tls-smoke-client-key-0123456789"})
    response = conn.getresponse(); body = response.read()
    if response.status != 200 or b"tls ok" not in body:
        sys.exit(f"tls-smoke: {model}: status {response.status}: {body[:300]!r}")
    print(f"tls-smoke: {model}: ok")
PY
