"""Example host-facts files ship inside the package, and `specgate hosts --example=NAME` hands them out."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import pytest

import pytest_specgate
from pytest_specgate.cli import main
from pytest_specgate.examples import host_example_names, host_examples_dir
from pytest_specgate.selection.host_probe import load_host_facts

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(pytest_specgate.__file__).parent


def test_the_examples_live_in_the_package_and_are_declared_package_data() -> None:
    assert host_example_names() == ["gb10", "linux-x86_64-24gb-nogpu", "m1-8gb-air-macos26", "m4-16gb"]
    assert host_examples_dir().resolve().is_relative_to(PACKAGE.resolve())
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for path in host_examples_dir().glob("*.json"):
        relative = path.relative_to(PACKAGE).as_posix()
        assert any(fnmatch.fnmatch(relative, glob) for glob in declared["pytest_specgate"]), relative


@pytest.mark.parametrize("name", host_example_names())
def test_every_example_is_a_valid_host_facts_file(name: str) -> None:
    facts = load_host_facts(host_examples_dir() / f"{name}.json")
    assert facts.summary()


def test_example_prints_the_shipped_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hosts", "--example=m4-16gb"]) == 0
    assert capsys.readouterr().out == (host_examples_dir() / "m4-16gb.json").read_text()


def test_example_out_writes_a_file_the_plugin_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "m4.json"
    assert main(["hosts", "--example=m4-16gb", f"--out={target}"]) == 0
    assert capsys.readouterr().out == f"specgate hosts: wrote the m4-16gb example to {target}\n"
    assert main(["hosts", f"--host-facts={target}", f"--pyproject={ROOT / 'pyproject.toml'}"]) == 0
    assert "profile m4-16gb          MATCH" in capsys.readouterr().out


def test_unknown_example_and_out_without_example_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hosts", "--example=m5-max"]) == 2
    assert capsys.readouterr().err == (
        "specgate hosts: --example=m5-max: no such host example; available: gb10, "
        "linux-x86_64-24gb-nogpu, m1-8gb-air-macos26, m4-16gb\n"
    )
    assert main(["hosts", "--out=facts.json"]) == 2
    assert "give --example=NAME too" in capsys.readouterr().err
