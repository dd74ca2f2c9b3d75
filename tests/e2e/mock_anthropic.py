# Copied from /work/shared/tools/claude-e2e/mock_anthropic.py (this project's shared e2e tooling, MIT-style);
# unchanged apart from this header. Used by tests/e2e/test_e2e_claude.py.
#!/usr/bin/env python3
"""Tiny offline mock of the Anthropic Messages API (stdlib only).

* Listens on 127.0.0.1 only (loopback), on a free port unless --port is given.
* Appends one JSON line per request to --log (method, path, query, headers
  with secrets redacted, parsed JSON body or raw text).
* POST /v1/messages            -> minimal valid Message, streaming (SSE) when
                                  the request body has "stream": true.
* POST /v1/messages/count_tokens -> {"input_tokens": N}
* GET  /v1/models[/<id>]       -> a small model list / model object
* anything else                -> 200 {} (logged with "unknown": true)

The chosen port is written to --port-file (if given) and printed on stdout as
"PORT <n>" once the socket is bound, so a wrapper script can wait for it.
"""
import argparse
import gzip
import json
import os
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

SECRET_HEADERS = {"x-api-key", "authorization", "proxy-authorization", "cookie"}

LOG_LOCK = threading.Lock()
ARGS = None


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z"


def log_record(rec):
    with LOG_LOCK:
        with open(ARGS.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            fh.flush()


def approx_tokens(obj):
    try:
        return max(1, len(json.dumps(obj)) // 4)
    except Exception:
        return 1


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-anthropic/1.0"

    def log_message(self, fmt, *args):  # keep stderr quiet unless --verbose
        if ARGS.verbose:
            sys.stderr.write("mock: " + (fmt % args) + "\n")

    # ---- request reading -------------------------------------------------
    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                line = self.rfile.readline()
                if not line:
                    break
                size = int(line.strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    # consume trailers up to blank line
                    while True:
                        t = self.rfile.readline()
                        if not t or t in (b"\r\n", b"\n"):
                            break
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # CRLF after chunk
            raw = b"".join(chunks)
        else:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n > 0 else b""
        enc = (self.headers.get("Content-Encoding") or "").lower()
        try:
            if enc == "gzip":
                raw = gzip.decompress(raw)
            elif enc == "deflate":
                raw = zlib.decompress(raw)
            elif enc == "br":
                pass  # not decodable with stdlib; logged raw (base64 not needed)
        except Exception:
            pass
        return raw

    def _record(self, raw, unknown=False, extra=None):
        parts = urlsplit(self.path)
        headers = {}
        for k, v in self.headers.items():
            headers[k] = "<redacted>" if k.lower() in SECRET_HEADERS else v
        rec = {
            "ts": _now(),
            "method": self.command,
            "path": parts.path,
            "query": parse_qs(parts.query),
            "headers": headers,
            "unknown": unknown,
        }
        body = None
        if raw:
            try:
                body = json.loads(raw.decode("utf-8"))
                rec["body"] = body
            except Exception:
                rec["body_text"] = raw.decode("utf-8", "replace")
        if extra:
            rec.update(extra)
        log_record(rec)
        return body

    # ---- responses ------------------------------------------------------
    def _send_json(self, status, obj, extra_headers=None):
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_mock_" + uuid.uuid4().hex[:16])
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
            self.wfile.flush()

    def _reply_text(self, body):
        return ARGS.reply

    def _messages(self, body):
        body = body if isinstance(body, dict) else {}
        model = body.get("model") or "claude-mock"
        msg_id = "msg_mock_" + uuid.uuid4().hex[:20]
        text = self._reply_text(body)
        in_tok = approx_tokens(body.get("messages", [])) + approx_tokens(body.get("system", ""))
        out_tok = max(1, len(text) // 4)
        usage_start = {
            "input_tokens": in_tok,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if not body.get("stream"):
            self._send_json(200, {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {**usage_start, "output_tokens": out_tok},
            })
            return
        events = [
            ("message_start", {"type": "message_start", "message": {
                "id": msg_id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": usage_start}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("ping", {"type": "ping"}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": text}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": out_tok}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        payload = "".join(
            "event: %s\ndata: %s\n\n" % (name, json.dumps(data)) for name, data in events
        ).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("request-id", "req_mock_" + uuid.uuid4().hex[:16])
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _dispatch(self):
        raw = self._read_body() if self.command in ("POST", "PUT", "PATCH", "DELETE") else b""
        path = urlsplit(self.path).path.rstrip("/")
        if self.command == "POST" and path == "/v1/messages":
            body = self._record(raw)
            return self._messages(body)
        if self.command == "POST" and path == "/v1/messages/count_tokens":
            body = self._record(raw)
            n = approx_tokens((body or {}).get("messages", [])) if isinstance(body, dict) else 1
            return self._send_json(200, {"input_tokens": n})
        if self.command in ("GET", "HEAD") and path == "/v1/models":
            self._record(raw)
            models = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                      for m in ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5")]
            return self._send_json(200, {"data": models, "has_more": False,
                                         "first_id": models[0]["id"], "last_id": models[-1]["id"]})
        if self.command in ("GET", "HEAD") and path.startswith("/v1/models/"):
            self._record(raw)
            mid = path.split("/")[-1]
            return self._send_json(200, {"type": "model", "id": mid, "display_name": mid,
                                         "created_at": "2025-01-01T00:00:00Z"})
        self._record(raw, unknown=True)
        return self._send_json(200, {})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _dispatch

    def do_OPTIONS(self):
        self._record(b"", unknown=True)
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    ap.add_argument("--log", required=True, help="JSONL file to append request records to")
    ap.add_argument("--port-file", help="write the bound port number here")
    ap.add_argument("--reply", default="MOCK-REPLY-OK", help="assistant text to answer with")
    ap.add_argument("--verbose", action="store_true")
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)  # loopback only
    srv.daemon_threads = True
    port = srv.server_address[1]
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(str(port))
        os.replace(tmp, ARGS.port_file)
    print("PORT %d" % port, flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
