"""The example backend package (examples/backends/specgate-echo), installed as a user would, passes
the packaged conformance spec, is named by its evidence, has its marker options checked at
collection, and its server is reaped when pytest is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from engines_testkit import build_wheel, wait_until

from pytest_specgate.evidence import find_bundles, read_records

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "backends" / "specgate-echo"

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")


def _example_wheel(directory: Path) -> Path:
    """The example's own files and entry points, as its pyproject declares them."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    files = {path.relative_to(EXAMPLE).as_posix(): path.read_bytes()
             for path in sorted((EXAMPLE / "specgate_echo").glob("*.py"))}
    return build_wheel(directory, project["name"], project["version"], files, project["entry-points"])


@pytest.fixture(scope="module")
def echo_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("echo")
    site = base / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--target", str(site), str(_example_wheel(base))],
        check=True, capture_output=True, timeout=120,
    )
    return site


@pytest.fixture
def with_echo(echo_site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(echo_site), str(REPO)]))


@pytest.mark.usefixtures("with_echo")
def test_the_installed_example_passes_the_packaged_conformance_spec_and_evidence_names_it(
    pytester: pytest.Pytester,
) -> None:
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "--pyargs",
                                           "pytest_specgate.conformance", "--specgate-engine=echo",
                                           f"--specgate-evidence={out}", timeout=300)
    result.assert_outcomes(passed=7)
    (bundle,) = find_bundles(out)
    record = read_records(bundle)["FR-0"].document
    assert record["outcome"] == "passed"
    engines = [engine for test in record["tests"] for engine in test["engines"] or []]
    assert engines and {engine["backend"] for engine in engines} == {"echo"}
    assert {engine["versions"]["specgate-echo"] for engine in engines} == {"1.0"}
    assert {engine["identity"]["engine"] for engine in engines} == {"specgate-echo"}
    assert {engine["selected_by"] for engine in engines} == {"--specgate-engine=echo"}


@pytest.mark.usefixtures("with_echo")
@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('engine("echo", gama=3)', "option gama: the echo backend has no option gama; it takes "
                                   "boot_timeout_s, delay_ms"),
        ('engine("echo", dely_ms=3)', "option dely_ms: the echo backend has no option dely_ms "
                                      "(did you mean delay_ms?); it takes boot_timeout_s, delay_ms"),
        ('engine("echo", delay_ms="high")', "option delay_ms of the echo backend must be a number >= 0, "
                                            "got 'high' (milliseconds the server waits before each word)"),
    ],
)
def test_a_bad_option_of_a_package_backend_is_one_collection_line(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    pytester.makepyfile(test_marked=f"""
        import pytest

        @pytest.mark.{marker}
        def test_bad(engine):
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: test_marked.py::test_bad: @pytest.mark.engine: {message}"])
    assert len([line for line in result.stderr.lines if line.strip()]) == 1, result.stderr.str()


KILLED = """
import json, os, pathlib, signal

import pytest


@pytest.mark.engine("echo")
def test_serve(engine):
    process = engine.capabilities().process
    pathlib.Path("server.json").write_text(json.dumps({"pid": process.pid, "runner": os.getpid()}))
    assert engine.chat([{"role": "user", "content": "hello there"}]).text == "hello there"
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.mark.usefixtures("with_echo")
def test_a_package_backend_server_started_with_start_server_is_reaped_after_kill_9(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_killed=KILLED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", timeout=120)
    assert result.ret == -signal.SIGKILL
    server = json.loads((pytester.path / "server.json").read_text())
    assert server["pid"] != server["runner"]
    assert wait_until(lambda: not _alive(server["pid"])), f"echo server {server['pid']} outlived pytest"
    logs = "".join(path.read_text() for path in pytester.path.rglob("server.log"))
    assert "the process that booted this engine is gone: stopping process group" in logs
