"""A tiny OpenAI-compatible HTTP server with scripted replies, for tests and offline demos.

What it is: `ScriptedServer(script)` runs a stdlib `ThreadingHTTPServer` on 127.0.0.1 (a free port) in a
background thread. `POST /v1/chat/completions` calls `script(messages, request_json, call_index)` once per
requested choice (`n`, unless `honour_n=False`, which answers with a single choice like some servers do); the
script returns the reply text, or an int HTTP status (e.g. 500, 429) to fail the whole request. `call_index`
counts script calls across the server's life (0, 1, 2, ...). `GET /v1/models` lists `model_name`. Usage
counts are rough: whitespace-separated words. With `"logprobs": true` each word gets a log-prob of -1.0;
`max_tokens` truncates to that many words with finish_reason "length".

Every request body is appended to `requests` (so `srv.requests[i]["messages"]`) and its Authorization header
to `authorizations`; `max_in_flight` records the peak number of chat requests handled at once.
Use it as a context manager:

    with ScriptedServer(lambda messages, req, i: "hello") as srv:
        engine = OpenAIEngine(EngineSpec(model="m", base_url=srv.base_url))

What it deliberately is not: a model or a faithful OpenAI implementation (no streaming, tools, or auth).

How to test: `pytest tests/test_engines.py -k openai`.
"""
from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)

Script = Callable[[list[dict], dict, int], "str | int"]


class ScriptedServer:
    """OpenAI-compatible server returning scripted replies; see the module docstring."""

    def __init__(self, script: Script, *, model_name: str = "scripted", honour_n: bool = True) -> None:
        self.script = script
        self.model_name = model_name
        self.honour_n = honour_n
        self.requests: list[dict] = []
        self.authorizations: list[str] = []  # Authorization header of each chat request (tests check the key)
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._calls = itertools.count()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------------------------------------- lifecycle
    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "ScriptedServer":
        handler = type("Handler", (_Handler,), {"server_ref": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ----------------------------------------------------------------------------------------------- replies
    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def chat_completion(self, body: dict, authorization: str = "") -> tuple[int, dict]:
        """(HTTP status, JSON body) for one chat request."""
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
        messages = body.get("messages") or []
        n = int(body.get("n") or 1) if self.honour_n else 1
        replies = []
        for _ in range(n):
            reply = self.script(messages, body, next(self._calls))
            if isinstance(reply, int):
                return reply, {"error": {"message": f"scripted status {reply}", "type": "scripted", "code": reply}}
            replies.append(str(reply))
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        choices, completion_tokens = [], 0
        for index, text in enumerate(replies):
            choice, used = make_choice(index, text, body.get("max_tokens"), bool(body.get("logprobs")))
            choices.append(choice)
            completion_tokens += used
        return 200, {
            "id": f"chatcmpl-scripted-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", self.model_name), "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    def models(self) -> dict:
        return {"object": "list", "data": [{"id": self.model_name, "object": "model", "created": 0,
                                            "owned_by": "drk"}]}


def make_choice(index: int, text: str, max_tokens: int | None, logprobs: bool) -> tuple[dict, int]:
    """One `choices[]` entry and its rough completion-token count (words)."""
    words = text.split()
    finish = "stop"
    if max_tokens is not None and len(words) > int(max_tokens):
        words = words[: int(max_tokens)]
        text, finish = " ".join(words), "length"
    choice: dict[str, Any] = {"index": index, "message": {"role": "assistant", "content": text},
                              "finish_reason": finish, "logprobs": None}
    if logprobs:
        choice["logprobs"] = {"content": [{"token": w, "logprob": -1.0, "bytes": list(w.encode()),
                                           "top_logprobs": []} for w in words]}
    return choice, len(words)


class _Handler(BaseHTTPRequestHandler):
    server_ref: ScriptedServer  # set on the per-server subclass
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("scripted server: " + format, *args)

    def _send_json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, self.server_ref.models())
        else:
            self._send_json(404, {"error": {"message": "not found", "type": "not_found", "code": 404}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": "not found", "type": "not_found", "code": 404}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "invalid JSON", "type": "invalid_request", "code": 400}})
            return
        srv = self.server_ref
        srv._enter()
        try:
            status, payload = srv.chat_completion(body, self.headers.get("Authorization", ""))
        except Exception as exc:  # noqa: BLE001 - a broken script is a 500, not a dead server
            log.exception("scripted server: script raised")
            status, payload = 500, {"error": {"message": f"script raised {type(exc).__name__}", "code": 500}}
        finally:
            srv._leave()
        self._send_json(status, payload)
