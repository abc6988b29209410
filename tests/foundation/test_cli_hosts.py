"""`specgate hosts`: real facts of this machine and the profiles it matches."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_specgate.cli import main

ROOT = Path(__file__).resolve().parents[2]
HOSTS = ROOT / "fixtures" / "hosts"


def test_hosts_json_on_this_machine_prints_probed_facts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hosts", "--json", "--pyproject", str(ROOT / "pyproject.toml")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["host"]["source"] == "probe"
    assert report["host"]["memory_bytes"] > 0
    assert set(report["profiles"]) == {"m4-16gb", "m1-8gb-air", "gb10"}


def test_hosts_text_with_a_facts_file_names_matches(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["hosts", "--host-facts", str(HOSTS / "gb10.json"), "--pyproject", str(ROOT / "pyproject.toml")]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "host: Linux aarch64, no Apple chip, 119.7 GB, NVIDIA GB10 (SM 12.1, unified memory)" in out
    assert "profile gb10             MATCH" in out
    assert (
        "profile m4-16gb          no match (needs Apple M4, memory ≥ 16 GB): "
        "Apple M4 (host has no Apple chip)" in out
    )


def test_hosts_bad_facts_file_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "facts.json"
    bad.write_text('{"os": "linux"}')
    assert main(["hosts", "--host-facts", str(bad)]) == 2
    assert f"{bad}: missing required field 'arch'" in capsys.readouterr().err


def test_console_script_is_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_specgate.cli", "hosts"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("host: ")
