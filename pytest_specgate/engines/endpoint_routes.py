"""Which running server answers for which configuration, on the endpoint backend.

The endpoint backend attaches to a server someone else started; it cannot turn
that server's draft off or change its model. So ``boot_engine(draft=None)`` (a
baseline) needs a second server the user names for that configuration with
``--specgate-endpoint-for=draft=none=http://127.0.0.1:8001``; without one the
request is refused, because handing back the same server would compare it with
itself. Options of the endpoint backend only configure the client (URL, health
path, timeouts, key), so changing them alone keeps the same server.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.contracts.engine_options import ENDPOINT_OPTIONS
from pytest_specgate.selection.endpoint_routes import EndpointRoute, normalized_url

__all__ = ["EndpointUnserved", "route_endpoint"]


class EndpointUnserved(Exception):
    """A configuration was asked of the endpoint backend that no named server runs."""


def _served(config: EngineConfig) -> EngineConfig:
    """The configuration as the server sees it: the client-side options dropped."""
    kept = tuple((key, value) for key, value in config.options if key not in ENDPOINT_OPTIONS)
    return dataclasses.replace(config, options=kept)


def _url_of(config: EngineConfig) -> str:
    return normalized_url(str(config.option("url", "")))


def _shown(value: object) -> str:
    return "none" if value is None else value if isinstance(value, str) else json.dumps(value)


def _changes_between(base: EngineConfig, wanted: EngineConfig) -> str:
    fields = (("target", base.target, wanted.target), ("draft", base.draft, wanted.draft),
              ("num_draft_tokens", base.num_draft_tokens, wanted.num_draft_tokens))
    named = [f"{name}={_shown(after)}" for name, before, after in fields if before != after]
    before = dict(base.options)
    options = [f"{key}={_shown(value)}" for key, value in wanted.options
               if key not in ENDPOINT_OPTIONS and before.get(key) != value]
    return ",".join(named + options)


def route_endpoint(
    base: EngineConfig, wanted: EngineConfig, routes: Sequence[EndpointRoute], asked_by: str
) -> EngineConfig:
    """``wanted`` with the URL of the server that really runs it; EndpointUnserved if none does.

    ``base`` is the test's engine (its URL serves it); ``asked_by`` names the call
    in the message. Backends other than the endpoint pass through unchanged.
    """
    if wanted.backend != "endpoint" or _served(wanted) == _served(base):
        return wanted
    if _url_of(wanted) != _url_of(base):
        return wanted
    for route in routes:
        if _served(base.changed(**dict(route.changes))) == _served(wanted):
            if route.url == _url_of(base):
                raise EndpointUnserved(
                    f"{asked_by}: --specgate-endpoint-for names {route.url} for "
                    f"({_served(wanted).describe()}), the same server the test's engine runs on; "
                    "one server cannot be both configurations"
                )
            return wanted.with_options(url=route.url)
    raise EndpointUnserved(
        f"{asked_by}: the endpoint backend cannot reconfigure the server at {_url_of(base)} "
        f"({_served(base).describe()}) into ({_served(wanted).describe()}) and will not hand it back "
        f"as that; name a server running it with "
        f"--specgate-endpoint-for={_changes_between(base, wanted)}=http://HOST:PORT"
    )
