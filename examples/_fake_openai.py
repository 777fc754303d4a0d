"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, so OpenAI-client examples run
offline. It answers ``POST /v1/chat/completions`` with the scripted turn that follows the tool results
the request already holds (``examples._scenario.TURNS``), with token usage."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from examples._scenario import MODEL_NAME, next_turn


def completion(request: dict[str, Any]) -> dict[str, Any]:
    messages = request.get("messages", [])
    first, turn = next_turn(sum(1 for m in messages if m.get("role") == "tool"))
    message: dict[str, Any] = {"role": "assistant", "content": turn if isinstance(turn, str) else None}
    if not isinstance(turn, str):
        message["tool_calls"] = [
            {
                "id": f"call_{first + i + 1}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for i, (n, a) in enumerate(turn)
        ]
    prompt = 150 + 60 * len(messages)
    return {
        "id": f"chatcmpl-{first}",
        "object": "chat.completion",
        "created": 1_767_225_600,
        "model": MODEL_NAME,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "stop" if isinstance(turn, str) else "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 25, "total_tokens": prompt + 25},
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        status, body = (200, completion(request)) if self.path.endswith("/chat/completions") else (404, {})
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def fake_openai() -> Iterator[dict[str, Any]]:
    """Serve the scripted model; yields the OpenAI client arguments that point at it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        yield {"base_url": base_url, "api_key": "sk-offline", "max_retries": 0}
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
