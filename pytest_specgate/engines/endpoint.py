"""The ``endpoint`` backend: an OpenAI-compatible server someone else already runs.

Nothing is started or stopped here; boot only checks the URL answers, picks the
model, and chooses the richest telemetry the server offers: ``/v1/status``
spec-decode fields, else vLLM ``/metrics`` counter deltas, else "unavailable".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_specgate.contracts.engine import EngineBootError, Telemetry
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.contracts.wire import StatusKey
from pytest_specgate.engines.boot import wait_for_health
from pytest_specgate.engines.client import (
    ClientEngine,
    EngineHTTPError,
    OpenAIClient,
    telemetry_from_status,
)
from pytest_specgate.engines.prometheus import MetricsParseError
from pytest_specgate.engines.spec_decode_metrics import SpecDecodeTelemetry
from pytest_specgate.selection.endpoint_routes import normalized_url

__all__ = ["boot", "choose_telemetry", "served_model"]

_DEFAULT_HEALTH_DEADLINE_S = 30.0


def served_model(client: OpenAIClient, wanted: str | None) -> str:
    """The model to ask for: ``wanted`` if the server lists it, else the first it lists.

    An answer that is not JSON, has no ``data`` list, or lists nothing is an error
    naming the URL: a server that does not say what it serves cannot be checked.
    """
    where = f"{client.base_url}/v1/models"
    try:
        body = client.get_json("/v1/models")
    except (EngineHTTPError, ValueError) as exc:
        raise EngineBootError(
            f"endpoint {where} did not answer a JSON model list ({type(exc).__name__}: {exc})"
        ) from None
    models = body.get("data")
    if not isinstance(models, list):
        raise EngineBootError(f"endpoint {where} answered JSON without a 'data' list: {str(body)[:200]}")
    ids = [m["id"] for m in models if isinstance(m, dict) and isinstance(m.get("id"), str)]
    if not ids:
        raise EngineBootError(f"endpoint {where} lists no models (data: {str(models)[:200]})")
    if wanted is not None and wanted not in ids:
        raise EngineBootError(f"endpoint {client.base_url} does not serve {wanted!r}; it serves {ids}")
    return wanted if wanted is not None else ids[0]


def choose_telemetry(client: OpenAIClient, config: EngineConfig) -> Callable[[], Telemetry]:
    """The best telemetry source this endpoint offers (probed once at boot).

    A ``/metrics`` that is missing or not Prometheus text means no counters,
    not a failed boot: the endpoint still serves, its telemetry is unavailable.
    """
    try:
        status = client.get_json("/v1/status")
    except (EngineHTTPError, ValueError):
        status = {}
    if StatusKey.SPEC_DECODE_ENABLED in status:
        return lambda: telemetry_from_status(client.get_json("/v1/status"))
    try:
        window = SpecDecodeTelemetry(
            lambda: client.get_text("/metrics"),
            enabled=config.draft is not None,
            draft_model_id=config.draft,
            num_draft_tokens=config.num_draft_tokens,
        )
    except (EngineHTTPError, MetricsParseError):
        unavailable = Telemetry.unavailable(
            enabled=config.draft is not None,
            draft_model_id=config.draft,
            num_draft_tokens=config.num_draft_tokens,
        )
        return lambda: unavailable
    return window.telemetry


def boot(config: EngineConfig, workdir: Path) -> ClientEngine:
    """Attach to ``config.option("url")``; ``close`` releases only the client."""
    url = config.option("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise EngineBootError(f"endpoint backend needs url='http://host:port', got {url!r}")
    base_url = normalized_url(url)
    health_path = config.option("health_path", "/v1/models")
    deadline_s = config.positive_number_option("health_deadline_s", _DEFAULT_HEALTH_DEADLINE_S)
    wait_for_health(f"{base_url}{health_path}", deadline_s)
    api_key = config.option("api_key")
    client = OpenAIClient(
        base_url,
        timeout_s=config.positive_number_option("request_timeout_s", 120.0),
        api_key=api_key if isinstance(api_key, str) else None,
        backend="endpoint",
    )
    try:
        return ClientEngine(
            backend="endpoint",
            client=client,
            model_id=served_model(client, config.target),
            telemetry=choose_telemetry(client, config),
        )
    except BaseException:
        client.close()
        raise
