"""The echo server: OpenAI-compatible chat completions (plain and streamed) from the standard library.

``python -m specgate_echo.server --port=N [--model=M] [--delay-ms=D] [--num-draft-tokens=G]``
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.drafted = 0
        self.accepted = 0


def _words(body: dict[str, object]) -> tuple[list[str], str]:
    messages = body.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else {}
    content = last.get("content", "") if isinstance(last, dict) else ""
    words = str(content).split() or ["echo"]
    limit = body.get("max_tokens")
    limit = limit if isinstance(limit, int) and limit > 0 else 16
    return words[:limit], ("length" if len(words) > limit else "stop")


def make_handler(model: str, delay_s: float, gamma: int | None, counters: _Counters) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            print(f"{self.address_string()} {format % args}", flush=True)

        def _json(self, payload: object, status: int = 200) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            routes = {
                "/health": {"status": "ok"},
                "/v1/models": {"object": "list", "data": [{"id": model, "object": "model",
                                                           "owned_by": "specgate-echo"}]},
                "/version": {"version": "1.0", "engine": "specgate-echo"},
                "/stats": {"drafted": counters.drafted, "accepted": counters.accepted},
            }
            if self.path in routes:
                self._json(routes[self.path])
            else:
                self._json({"error": {"message": f"no route {self.path}"}}, 404)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/chat/completions" or not isinstance(body, dict):
                self._json({"error": {"message": f"no route {self.path}"}}, 404)
                return
            words, finish = _words(body)
            if gamma is not None:
                with counters.lock:
                    counters.drafted += len(words)
                    counters.accepted += len(words)
            pieces = [word if index == 0 else f" {word}" for index, word in enumerate(words)]
            usage = {"prompt_tokens": len(json.dumps(body.get("messages", [])).split()),
                     "completion_tokens": len(words)}
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            if body.get("stream"):
                self._stream(pieces, finish, usage)
                return
            time.sleep(delay_s * len(words))
            self._json({
                "id": "chatcmpl-echo", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(pieces)},
                             "finish_reason": finish}],
                "usage": usage,
            })

        def _stream(self, pieces: list[str], finish: str, usage: dict[str, int]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            chunks = [{"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                      for piece in pieces]
            chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            chunks.append({"choices": [], "usage": usage})
            for chunk in chunks:
                time.sleep(delay_s)
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(prog="specgate_echo.server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="echo")
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--num-draft-tokens", type=int, default=None)
    arguments = parser.parse_args()
    handler = make_handler(arguments.model, arguments.delay_ms / 1000, arguments.num_draft_tokens,
                           _Counters())
    server = ThreadingHTTPServer(("127.0.0.1", arguments.port), handler)
    print(f"specgate-echo serving {arguments.model} on 127.0.0.1:{arguments.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
