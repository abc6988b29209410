"""``--specgate-endpoint-for=CHANGES=URL``: which named server serves which configuration.

Parsed at configure time into ``EndpointRoute`` values; the endpoint backend
(``engines.endpoint_routes.route_endpoint``) picks the server for a ``boot_engine``
request from them, and refuses a configuration no named server runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final, final

from pytest_specgate.contracts.engine_config import freeze_option

__all__ = ["EndpointRoute", "normalized_url", "parse_endpoint_route"]

_NONE_WORDS: Final = ("none", "null")
_URL_STARTS: Final = ("=http://", "=https://")


@final
@dataclass(frozen=True)
class EndpointRoute:
    """``changes`` (as ``boot_engine`` keywords) are served by the server at ``url``."""

    changes: tuple[tuple[str, object], ...]
    url: str


def normalized_url(url: str) -> str:
    """``http://h:p/v1/`` and ``http://h:p`` name the same server."""
    return url.rstrip("/").removesuffix("/v1")


def _value(text: str) -> object:
    if text.lower() in _NONE_WORDS:
        return None
    try:
        return freeze_option(json.loads(text))
    except json.JSONDecodeError:
        return text


def parse_endpoint_route(text: str) -> EndpointRoute:
    """``draft=none,num_draft_tokens=none=http://h:p`` -> a route; ValueError says what is wrong."""
    cut = min((text.find(start) for start in _URL_STARTS if start in text), default=-1)
    if cut <= 0:
        raise ValueError(f"expected CHANGES=URL such as draft=none=http://127.0.0.1:8001, got {text!r}")
    changes: dict[str, object] = {}
    for item in text[:cut].split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected KEY=VALUE changes before the URL in {text!r}, got {item!r}")
        changes[key.strip()] = _value(value.strip())
    return EndpointRoute(changes=tuple(sorted(changes.items())), url=normalized_url(text[cut + 1:]))


