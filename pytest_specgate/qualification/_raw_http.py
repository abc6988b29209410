"""Hand-written HTTP on a raw socket, for the faults an HTTP client library will not make.

Resetting a connection with a TCP RST part-way through a response needs the
socket itself; ``httpx`` only ever closes politely.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from pytest_specgate.qualification._greedy import Messages

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine

__all__ = ["raw_chat_request", "reset_after"]

_RAW_READ_LIMIT: Final = 65536


def _address(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    if parts.scheme != "http" or parts.hostname is None:
        raise ValueError(f"client-side faults need a plain http:// engine URL, found {base_url!r}")
    return parts.hostname, parts.port or 80


def raw_chat_request(engine: Engine, messages: Messages, *, stream: bool, max_tokens: int) -> bytes:
    body = json.dumps(
        {
            "model": engine.model_id,
            "messages": messages,
            "stream": stream,
            "max_tokens": max_tokens,
            "temperature": 0.0,
        }
    ).encode()
    host, port = _address(engine.base_url)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


def reset_after(engine: Engine, request: bytes, until: bytes, timeout_s: float) -> bool:
    """Send ``request`` on a raw socket, read until ``until`` appears, then close with a TCP RST."""
    sock = socket.create_connection(_address(engine.base_url), timeout=timeout_s)
    seen = b""
    try:
        sock.sendall(request)
        while until not in seen and len(seen) < _RAW_READ_LIMIT:
            chunk = sock.recv(4096)
            if not chunk:
                break
            seen += chunk
    except OSError:
        return False
    finally:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    return until in seen
