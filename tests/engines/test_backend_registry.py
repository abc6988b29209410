"""Backends are listed once; a third-party package adds one through the ``pytest_specgate.backends`` group."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from engines_testkit import build_wheel

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.markers import BUILTIN_BACKEND_NAMES, ENGINE_HELP
from pytest_specgate.engines import backends as registry
from pytest_specgate.engines.backends import (
    BUILTIN_BACKENDS,
    ENTRY_POINT_GROUP,
    backend_named,
    backends_from_entry_points,
    boot_function,
)
from pytest_specgate.evidence import find_bundles, read_records


def _entry(name: str, value: str) -> metadata.EntryPoint:
    return metadata.EntryPoint(name, value, ENTRY_POINT_GROUP)


def test_the_built_ins_are_the_one_list_every_message_uses() -> None:
    assert list(BUILTIN_BACKENDS) == ["mock", "mlx", "vllm", "endpoint"]
    assert tuple(BUILTIN_BACKENDS) == BUILTIN_BACKEND_NAMES
    assert "mock, mlx, vllm, endpoint (default mock)" in ENGINE_HELP and ENTRY_POINT_GROUP in ENGINE_HELP
    with pytest.raises(SpecgateInputError, match=r"^here: unknown engine backend 'tgi'; expected one of "
                                                r"endpoint, mlx, mock, vllm \(more register through"):
        backend_named("tgi", "here")


def test_an_entry_point_adds_a_backend_and_may_not_replace_one() -> None:
    found = backends_from_entry_points([_entry("echo", "specgate_echo:boot")])
    assert (found["echo"].name, found["echo"].origin) == (
        "echo", "entry point echo = specgate_echo:boot (unknown distribution)")
    assert found["mock"] is BUILTIN_BACKENDS["mock"]
    with pytest.raises(SpecgateInputError, match=r"'mock': entry point mock = evil:boot .* clashes with the "
                                                 r"built in one"):
        backends_from_entry_points([_entry("mock", "evil:boot")])
    with pytest.raises(SpecgateInputError, match=r"'echo': entry point echo = b:boot .* clashes "
                                                r"with the entry point echo = a:boot"):
        backends_from_entry_points([_entry("echo", "a:boot"), _entry("echo", "b:boot")])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("no_such_module_xyz:boot",
         "cannot be loaded: ModuleNotFoundError: No module named 'no_such_module_xyz'"),
        ("json:no_such_boot", "cannot be loaded: AttributeError: "),
        ("json.decoder:JSONArray", None),
        ("sys:maxsize", "names a int, not an EngineBackend or a boot function"),
    ],
)
def test_an_entry_point_that_does_not_load_to_a_backend_is_an_input_error(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str | None
) -> None:
    monkeypatch.setattr(registry, "available_backends",
                        lambda: backends_from_entry_points([_entry("third", value)]))
    if message is None:
        assert callable(boot_function("third"))
        return
    with pytest.raises(SpecgateInputError, match=f"^engine backend 'third' \\(entry point third = {value} "):
        boot_function("third")
    with pytest.raises(SpecgateInputError) as error:
        boot_function("third")
    assert message in str(error.value)


ECHO_BACKEND = '''\
"""A third-party pytest-specgate backend: an in-process engine that answers with the last message."""

from pytest_specgate.engines import Capabilities, ChatResult, StreamResult, Telemetry


class EchoEngine:
    backend = "echo"
    base_url = "http://127.0.0.1:9"

    def __init__(self, model_id):
        self.model_id = model_id

    def chat(self, messages, **params):
        return ChatResult(str(messages[-1]["content"]), None, "stop", None, None, {}, 0.0)

    def stream(self, messages, **params):
        text = str(messages[-1]["content"])
        return StreamResult([{"choices": [{"delta": {"content": text}, "finish_reason": "stop"}]}])

    def telemetry(self):
        return Telemetry.unavailable(enabled=False)

    def versions(self):
        return {"specgate-echo": "1.0"}

    def capabilities(self):
        return Capabilities()

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def boot(config, workdir):
    return EchoEngine(config.target or "echo-model")
'''

ECHO_SPECS = """
import pytest

from pytest_specgate.engines import Engine


@pytest.mark.engine("echo", target="parrot")
def test_marked_for_the_third_party_backend(engine, boot_engine):
    assert isinstance(engine, Engine) and engine.backend == "echo" and engine.model_id == "parrot"
    assert engine.chat([{"role": "user", "content": "hello"}]).text == "hello"
    assert boot_engine(target="other").model_id == "other"


def test_chosen_on_the_command_line(engine):
    assert engine.backend == "echo" and engine.stream([{"role": "user", "content": "hi"}]).text == "hi"
"""


def build_echo_wheel(directory: Path) -> Path:
    """A real wheel of the ``specgate-echo`` distribution declaring its backend entry point."""
    return build_wheel(directory, "specgate-echo", "1.0", {"specgate_echo.py": ECHO_BACKEND.encode()},
                       {ENTRY_POINT_GROUP: {"echo": "specgate_echo:boot"}})


def test_a_pip_installed_backend_package_runs_specs_by_its_entry_point(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--target", str(site), str(build_echo_wheel(tmp_path))],
        check=True, capture_output=True, timeout=120,
    )
    assert (site / "specgate_echo-1.0.dist-info" / "entry_points.txt").is_file()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_echo=ECHO_SPECS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--specgate-engine=echo")
    result.assert_outcomes(passed=2)
    unknown = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--specgate-engine=parrot")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["ERROR: --specgate-engine: unknown engine backend 'parrot'; expected one "
                                  "of echo, endpoint, mlx, mock, vllm *"])


def test_a_backend_whose_engine_calls_itself_mlx_is_recorded_by_its_registry_name(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #28: an unenrolled entry-point backend whose engines report ``backend = "mlx"`` is
    recorded as what booted it (``echo``), and the mismatch keeps its evidence from qualifying."""

    says_mlx = ECHO_BACKEND.replace('backend = "echo"', 'backend = "mlx"').encode()
    wheel = build_wheel(tmp_path, "specgate-echo", "1.0", {"specgate_echo.py": says_mlx},
                        {ENTRY_POINT_GROUP: {"echo": "specgate_echo:boot"}})
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--target", str(site), str(wheel)],
        check=True, capture_output=True, timeout=120,
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_echo="""
import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028")
@pytest.mark.engine("echo", target="parrot")
def test_canary(engine):
    assert engine.backend == "mlx"
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--specgate-evidence=out")
    result.assert_outcomes(passed=1)
    (bundle,) = find_bundles(pytester.path / "out")
    record = read_records(bundle)["AC-10"].document
    [entry] = record["tests"][0]["engines"]
    assert (entry["backend"], entry["reported_backend"]) == ("echo", "mlx")
    assert ("test_echo.py::test_canary: the engine booted by the 'echo' backend reports itself as 'mlx': an "
            "engine is known by the configuration that booted it, and one that says otherwise is not "
            "believed") in record["not_qualifying_reasons"]
