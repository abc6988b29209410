"""The mock engine's ASGI app: the routes of :mod:`.routes` over one :class:`MockState`.

The mock is split by concern: ``model`` (target and draft), ``generation``
(rounds to text), ``faults`` (each fault kind's behaviour), ``envelopes``
(OpenAI response and chunk shapes), ``exposition`` (``/metrics``, ``/v1/status``),
``state`` and ``routes``. This module only assembles them, and keeps the names
callers imported from it before the split.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route

from pytest_specgate.engines.mock.faults import CRASH_EXIT_CODE
from pytest_specgate.engines.mock.routes import MockEngineApp, http_exception, route_table
from pytest_specgate.engines.mock.state import MockState

__all__ = ["CRASH_EXIT_CODE", "MockState", "create_app"]


def create_app(state: MockState) -> Starlette:
    routes = route_table(MockEngineApp(state))
    return Starlette(
        routes=[Route(path, endpoint, methods=methods) for path, endpoint, methods in routes],
        exception_handlers={HTTPException: http_exception, Exception: http_exception},
    )
