"""A local OpenAI-compatible chat-completions server for the LLM judge's tests.

``reply(request) -> content`` scripts each answer (valid, invalid or an HTTP error with
``status``); ``hold`` makes every request wait for ``release`` (a slow model) and ``received``
is set on each request, so a test waits for events, never for time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], str]


def answer(
    score: float = 0.9, label: str = "pass", explanation: str = "The answer addresses the request."
) -> str:
    return json.dumps({"score": score, "label": label, "explanation": explanation})


@dataclass
class JudgeServer:
    reply: Reply = field(default=lambda request: answer())
    status: int = 200
    hold: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    received: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    release: threading.Event = field(default_factory=threading.Event)
    base_url: str = ""

    def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1_767_225_600,
            "model": request.get("model", "judge"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": self.reply(request)},
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }


def _handler(server: JudgeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            assert self.path == "/v1/chat/completions", self.path
            server.requests.append(body)
            server.received.release()
            if server.hold:
                server.release.wait()
            if server.status != 200:
                payload = json.dumps({"error": {"message": "overloaded", "type": "server_error"}}).encode()
                status = server.status
            else:
                payload = json.dumps(server.completion(body)).encode()
                status = 200
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up waiting (a timeout under test)

    return Handler


@contextmanager
def judge_server(**options: Any) -> Iterator[JudgeServer]:
    server = JudgeServer(**options)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    httpd.daemon_threads = True
    server.base_url = f"http://127.0.0.1:{httpd.server_port}/v1"
    thread = threading.Thread(target=httpd.serve_forever, name="judge-test-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
