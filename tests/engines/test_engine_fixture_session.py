"""The `engine` fixture in a real pytest session: shared per config, nothing left afterwards.

Runs pytest in a subprocess, records which server each test got, then looks for
the ports and the engine process after the session has ended. The session has a
failing test and ends with Ctrl-C (SIGINT), so both paths must tear down.
Until plugin.py provides the fixture, the conftest below supplies exactly the
code the plugin is meant to contain.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import pytest_specgate.plugin as plugin

FIXTURE_CONFTEST = """
from collections.abc import Iterator

import pytest

from pytest_specgate.contracts.markers import ENGINE_MARKER_DOC
from pytest_specgate.contracts.engine_config import RunEngineOptions
from pytest_specgate.engines.config import EnginePool, engine_choice_for_node, engine_workdir


def pytest_configure(config):
    config.addinivalue_line("markers", ENGINE_MARKER_DOC)


@pytest.fixture(scope="session")
def specgate_engine_pool() -> Iterator[EnginePool]:
    pool = EnginePool()
    try:
        yield pool
    finally:
        pool.close_all()


@pytest.fixture
def engine(request, specgate_engine_pool, tmp_path_factory):
    options = RunEngineOptions(request.config.getoption("specgate_engine"),
                               request.config.getoption("specgate_endpoint"))
    config = engine_choice_for_node(request.node, options).config
    base = tmp_path_factory.getbasetemp() / "specgate-engines"
    return specgate_engine_pool.get(config, engine_workdir(base, config))
"""

TESTS = """
import json, os, signal
import pytest

SUBPROCESS = pytest.mark.engine(
    "mock", draft="specgate-mock-draft", num_draft_tokens=2, isolation="subprocess"
)


def record(engine, name):
    with open({record!r}, "a") as out:
        out.write(json.dumps({{"test": name, "url": engine.base_url, "pid": engine.pid,
                              "object": id(engine)}}) + "\\n")


def test_one(engine):
    record(engine, "one")
    assert engine.chat([{{"role": "user", "content": "hi"}}], temperature=0, max_tokens=3).text


def test_two(engine):
    record(engine, "two")
    assert engine.backend == "mock"


@SUBPROCESS
def test_three(engine):
    record(engine, "three")
    assert engine.telemetry().enabled


@SUBPROCESS
def test_four_fails(engine):
    record(engine, "four")
    assert False, "a failing test must not leak its engine"


@SUBPROCESS
def test_five_interrupted(engine):
    record(engine, "five")
    os.kill(os.getpid(), signal.SIGINT)
"""


def _setup(pytester: pytest.Pytester) -> Path:
    record = pytester.path / "engines.jsonl"
    if not hasattr(plugin, "engine"):
        pytester.makeconftest(FIXTURE_CONFTEST)
    pytester.makepyfile(test_engines=TESTS.format(record=str(record)))
    return record


def _records(path: Path) -> dict[str, dict[str, object]]:
    return {entry["test"]: entry for entry in map(json.loads, path.read_text().splitlines())}


def _listening(url: object) -> bool:
    port = int(str(url).rsplit(":", 1)[1])
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _process_gone(pid: object) -> bool:
    try:
        state = Path(f"/proc/{int(str(pid))}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in state


def test_engines_are_shared_per_config_and_gone_after_failures_and_ctrl_c(pytester: pytest.Pytester) -> None:
    record = _setup(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*"])
    seen = _records(record)
    assert list(seen) == ["one", "two", "three", "four", "five"]
    assert seen["one"]["object"] == seen["two"]["object"] and seen["one"]["pid"] is None
    assert seen["three"]["pid"] == seen["four"]["pid"] == seen["five"]["pid"] is not None
    assert seen["three"]["url"] != seen["one"]["url"]
    assert not _listening(seen["one"]["url"]) and not _listening(seen["three"]["url"])
    assert _process_gone(seen["three"]["pid"])
