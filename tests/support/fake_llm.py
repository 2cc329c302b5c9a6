"""A local HTTP server speaking the OpenAI chat-completions protocol, for LLM fault tests.

Only the external LLM endpoint is stood in for; everything else in the tests is real.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from continuum.inference.llm import OpenAICompatibleLLM


class FakeLLM:
    """Set `mode` and `answer` (or queue `answers`, each used once: a dict is sent as JSON, a
    string as is; or `by_prompt`, the answer to each prompt name in json_schema mode); `requests` records every request body received, `headers` its headers, and `usages` the token
    usage reported with each answer (a token per 4 characters). `json_schema=False` makes it
    refuse `response_format: json_schema` with a 400, as servers without it do."""

    def __init__(self) -> None:
        self.mode = "good"  # good | slow | drip | error500 | error429 | not_json | bad_shape
        self.answer: dict[str, Any] = {}
        self.answers: list[dict[str, Any] | str] = []
        self.by_prompt: dict[str, dict[str, Any]] = {}
        self.json_schema = True
        self.delay_s = 0.0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # of each request, names lower-cased
        self.usages: list[dict[str, int]] = []
        self.url = ""

    def completion(self, request: dict[str, Any], content: str) -> dict[str, Any]:
        prompt_chars = sum(len(m["content"]) for m in request["messages"])
        usage = {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(content) // 4}
        self.usages.append(usage)
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "fake",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {**usage, "total_tokens": sum(usage.values())},
        }  # fmt: skip


def _handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            # The client may have given up on this answer (its deadline passed).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            request = json.loads(self.rfile.read(length))
            fake.requests.append(request)
            fake.headers.append({name.lower(): value for name, value in self.headers.items()})
            if not fake.json_schema and request["response_format"]["type"] == "json_schema":
                return self._send(400, b'{"error": "response_format json_schema unsupported"}')
            if fake.mode == "slow":
                time.sleep(fake.delay_s)
            if fake.mode == "drip":  # a good answer, one byte every delay_s: no read times out
                body = json.dumps(fake.completion(request, json.dumps(fake.answer))).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for byte in body:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(fake.delay_s)
                return None
            if fake.mode == "error500":
                return self._send(500, b'{"error": "boom"}')
            if fake.mode == "error429":
                return self._send(429, b'{"error": "rate limited"}')
            if fake.mode == "bad_shape":
                return self._send(200, b'{"unexpected": true}')
            answer: dict[str, Any] | str = fake.answers.pop(0) if fake.answers else fake.answer
            prompt = request["response_format"].get("json_schema", {}).get("name")
            answer = fake.by_prompt.get(prompt, answer)
            content = answer if isinstance(answer, str) else json.dumps(answer)
            if fake.mode == "not_json":
                content = "I think the answer is yes"
            return self._send(200, json.dumps(fake.completion(request, content)).encode())

    return Handler


def llm_for(fake: FakeLLM, timeout_s: float = 5.0, **options: Any) -> OpenAICompatibleLLM:
    """A real client of the fake endpoint."""
    return OpenAICompatibleLLM(
        fake.url, "fake-model", api_key="sk-test", timeout_s=timeout_s, **options
    )


@contextmanager
def fake_llm_server() -> Iterator[FakeLLM]:
    fake = FakeLLM()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
