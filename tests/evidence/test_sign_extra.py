"""Signing lives behind the ``sign`` extra (PyCA cryptography): without it, signing and checking
signatures stop with one line naming the extra; a run, render and the gate without a trust
policy need nothing of it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from evidence_testkit import TEST_ENV, GitRepo, qualifying_bundle

from pytest_specgate.cli import main

MESSAGE = ("signing and checking signatures needs cryptography (not installed): "
           "pip install 'pytest-specgate[sign]'")


@pytest.fixture
def without_cryptography(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(sys.modules, "cryptography", None)
    for name in [name for name in sys.modules if name.startswith("cryptography.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "pytest_specgate.evidence._signing", raising=False)
    # Names the package's lazy __getattr__ already resolved would skip the import.
    import pytest_specgate.evidence as evidence

    for name in ("SignedBundle", "SigningError", "SigningKey", "load_signing_key", "sign_bundle"):
        monkeypatch.delitem(vars(evidence), name, raising=False)
    yield
    sys.modules.pop("pytest_specgate.evidence._signing", None)


def test_sign_names_the_extra(git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              without_cryptography: None) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    key = tmp_path / "id_ed25519"
    key.write_text("not read")
    assert main(["sign", str(written.path), f"--key={key}"]) == 2
    assert capsys.readouterr().err == f"specgate sign: {MESSAGE}\n"


def test_render_and_a_run_need_nothing_of_it(git_repo: GitRepo, capsys: pytest.CaptureFixture[str],
                                             without_cryptography: None) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    assert main(["render", str(written.path)]) == 0
    assert "## AC-10 evidence" in capsys.readouterr().out


def test_a_sign_key_option_without_the_extra_stops_the_run_in_one_line(
    pytester: pytest.Pytester, without_cryptography: None
) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    key = pytester.path / "id_ed25519"
    key.write_text("not read")
    result = pytester.runpytest("-p", "no:cacheprovider", "--specgate-evidence=out",
                                f"--specgate-sign-key={key}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {MESSAGE.replace('[', '[[]')}"])
