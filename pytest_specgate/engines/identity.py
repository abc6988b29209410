"""What an engine is, by what the plugin booted and what the server says about itself.

Evidence must not take a test's word for which engine it ran on, and an ``endpoint`` URL says
nothing about what answers behind it. So every engine a test was handed is recorded by the plugin
with the server's own identity: the models it lists and their owner, its version route, the
``server`` header and the ``system_fingerprint`` of its chat answers. The built-in mock names
itself in those answers (owner ``specgate-mock``, ``/version`` engine ``specgate-mock``), so it is
recognised behind any URL.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from pytest_specgate.contracts.engine import UNKNOWN_VERSIONS, declared_version
from pytest_specgate.contracts.markers import BUILTIN_BACKEND_NAMES

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine
    from pytest_specgate.engines.client import OpenAIClient

__all__ = ["MOCK_SERVER_NAME", "ServerIdentity", "engine_entry", "is_loopback_url", "probe_identity"]

MOCK_SERVER_NAME: Final = "specgate-mock"
"""How the built-in mock names itself: ``owned_by`` of its models and ``engine`` of ``/version``."""
_IDENTITY_TIMEOUT_S: Final = 10.0
# Which ``versions()`` entries name the serving software of each built-in backend.
_VERSION_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "vllm": ("vllm", "vllm_server"),
    "mlx": ("mlx-lm",),
    "mock": ("version",),
}


@dataclass(frozen=True)
class ServerIdentity:
    """The server's answers about itself; ``None`` where it gave none."""

    url: str
    models: tuple[tuple[str, str | None], ...] = ()
    version: str | None = None
    engine: str | None = None
    server_header: str | None = None

    @property
    def is_mock(self) -> bool:
        named = [owner for _, owner in self.models] + [self.engine, self.server_header]
        return any(isinstance(name, str) and MOCK_SERVER_NAME in name for name in named)

    def to_dict(self, system_fingerprint: str | None = None) -> dict[str, Any]:
        return {
            "url": self.url,
            "models": [{"id": model, "owned_by": owner} for model, owner in self.models],
            "version": self.version,
            "engine": self.engine,
            "server": self.server_header,
            "system_fingerprint": system_fingerprint,
        }


def is_loopback_url(url: str) -> bool | None:
    """True for ``localhost``/loopback addresses, False for any other host, None when unparsable."""
    host = urlsplit(url).hostname
    if not host:
        return None
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def probe_identity(client: OpenAIClient) -> ServerIdentity:
    """Ask ``/v1/models`` and ``/version`` (read-only routes: no counter of the server moves)."""
    import httpx

    from pytest_specgate.engines.client import EngineHTTPError

    models: tuple[tuple[str, str | None], ...] = ()
    header = None
    try:
        body, headers = client.get_json_with_headers("/v1/models", timeout_s=_IDENTITY_TIMEOUT_S)
        header = _text(headers.get("server"))
        listed = body.get("data")
        models = tuple(
            (str(item["id"]), _text(item.get("owned_by")))
            for item in (listed if isinstance(listed, list) else [])
            if isinstance(item, Mapping) and isinstance(item.get("id"), str)
        )
    except (EngineHTTPError, httpx.HTTPError, ValueError):
        pass
    version = engine = None
    try:
        answer = client.get_json("/version", timeout_s=_IDENTITY_TIMEOUT_S)
        version, engine = _text(answer.get("version")), _text(answer.get("engine"))
    except (EngineHTTPError, httpx.HTTPError, ValueError):
        pass
    return ServerIdentity(client.base_url, models, version, engine, header)


def version_known(backend: str, versions: Mapping[str, object], identity: ServerIdentity) -> bool:
    """Whether the serving software's version was read, from the backend or from the server. A
    built-in backend names it under its own keys; a third-party one in any entry of
    ``versions()`` (docs/backends.md: ``{"specgate-echo": "1.0"}``)."""
    if backend not in BUILTIN_BACKEND_NAMES and declared_version(versions) is not None:
        return True
    named = [versions.get(key) for key in _VERSION_KEYS.get(backend, ())] + [identity.version]
    return any(isinstance(value, str) and value.strip().lower() not in UNKNOWN_VERSIONS
               for value in named)


def engine_entry(engine: Engine, registry_name: str, config_description: str, identity: ServerIdentity,
                 system_fingerprint: str | None = None) -> dict[str, Any]:
    """One ``tests[].engines`` entry: what was booted, what the server said, and what follows.

    ``backend`` is ``registry_name``, the backend the booted configuration named (a built-in or an
    entry point): enrolment is judged on it. What the engine object calls itself is kept beside it
    as ``reported_backend``; an engine that reports another name is refused by the verdict policy,
    so a third-party backend cannot pass for ``mlx`` by saying so.
    """
    versions = engine.versions()
    return {
        "backend": registry_name,
        "reported_backend": engine.backend,
        "model": engine.model_id,
        "config": config_description,
        "versions": versions,
        "identity": identity.to_dict(system_fingerprint),
        "simulated": "mock" in (registry_name, engine.backend) or identity.is_mock,
        "loopback": is_loopback_url(engine.base_url),
        "version_known": version_known(registry_name, versions, identity),
    }
