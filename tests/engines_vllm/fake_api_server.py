"""Stand-in for ``vllm.entrypoints.openai.api_server``, installed under that name in a temp dir.

It lets the process-mode boot discipline (argv, health wait, early exit, process
group teardown, /metrics deltas) be tested where vLLM is not installed.
``FAKE_VLLM_MODE`` picks the behaviour: ``serve`` (default), ``exit`` (die at
once) or ``hang`` (start a grandchild, never become healthy). Pids go to
``FAKE_VLLM_PIDS`` so the test can check that none survive.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--served-model-name", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--speculative-config")
    known, _ = parser.parse_known_args()
    return known


def _handler(served: str, metrics: list[str]) -> type[BaseHTTPRequestHandler]:
    chats = {"count": 0}

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: str, kind: str = "application/json") -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, "")
            elif self.path == "/version":
                self._send(200, json.dumps({"version": "0.0.fake"}))
            elif self.path == "/metrics":
                self._send(200, metrics[min(chats["count"], len(metrics) - 1)], "text/plain")
            else:
                self._send(404, "{}")

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            request = json.loads(self.rfile.read(length))
            chats["count"] += 1
            body = {
                "model": served,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": f"echo {request['model']}"},
                    "finish_reason": "length",
                    "token_ids": [1, 2, 3] if request.get("return_token_ids") else None,
                }],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
            self._send(200, json.dumps(body))

        def log_message(self, format: str, *args: object) -> None:
            sys.stderr.write(format % args + "\n")

    return Handler


def main() -> None:
    args = _arguments()
    pids = Path(os.environ["FAKE_VLLM_PIDS"])
    with pids.open("a") as out:
        out.write(f"{os.getpid()}\n")
    print(f"fake vllm serving {args.model} as {args.served_model_name}", flush=True)
    mode = os.environ.get("FAKE_VLLM_MODE", "serve")
    if mode == "exit":
        print("RuntimeError: Engine core initialization failed", flush=True)
        sys.exit(3)
    if mode == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with pids.open("a") as out:
            out.write(f"{child.pid}\n")
        child.wait()
        return
    metrics = [Path(p).read_text() for p in os.environ["FAKE_VLLM_METRICS"].split(os.pathsep)]
    server = ThreadingHTTPServer((args.host, args.port), _handler(args.served_model_name, metrics))
    server.serve_forever()


if __name__ == "__main__":
    main()
