"""Node ids redacted with their file part once per file: the same text as a whole-id pass for
honest ids, and nothing planted anywhere in an id survives."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_specgate.evidence import LocalIdentity, build_redactor
from pytest_specgate.evidence._nodeids import redacted_nodeid
from pytest_specgate.evidence._redact import Redactor

IDENTITY = LocalIdentity(
    user_names=("alice-ops",), host_names=("buildbox-7",), home_dirs=("/home/alice-ops",)
)
HF_TOKEN = "hf_" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3f"
GITHUB_TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"


def _redactor() -> Redactor:
    return build_redactor(Path("/srv/repo"), (), {}, IDENTITY)


@pytest.mark.parametrize(
    "nodeid",
    [
        "tests/test_generated_000.py::test_trivial_1",
        "tests/test_a.py::TestSpec::test_b[1-2]",
        "acceptance/spec028/test_ac10.py::test_speedup[m4-16gb]",
        "tests/test_a.py::cafe_test",
        "tests/test_a.py::test_ip[10.0.0.1]",
        "tests/test_a.py::test_x[alice-ops]",
        "README.txt::README.txt",
        "tests/test_a.py",
        "tests/test_a.py::",
        "/home/alice-ops/repo/t.py::test_x",
        "tests/test_a.py:://user:hunter22@host/x",
    ],
)
def test_a_node_id_reads_as_the_whole_id_pass_gives_it(nodeid: str) -> None:
    redactor = _redactor()
    assert redacted_nodeid(redactor, nodeid) == _redactor().text(nodeid)


@pytest.mark.parametrize(
    ("nodeid", "secret"),
    [
        (f"tests/test_a.py::test_x[{HF_TOKEN}]", HF_TOKEN),
        (f"tests/test_a.py::TestA::test_b[{GITHUB_TOKEN}-1]", GITHUB_TOKEN),
        ("tests/test_a.py::test_login[password=hunter22]", "hunter22"),
        (f"tests/test_{GITHUB_TOKEN}.py::test_x", GITHUB_TOKEN),
        ("/home/alice-ops/repo/t.py::test_x", "alice-ops"),
        ("tests/test_a.py::test_x[alice-ops]", "alice-ops"),
        ("tests/test_a.py:://user:hunter22@host/x", "hunter22"),
    ],
)
def test_nothing_planted_in_a_node_id_survives(nodeid: str, secret: str) -> None:
    redactor = _redactor()
    # The file part is met first on its own, as a hundred tests of one file meet it.
    redacted_nodeid(redactor, nodeid.partition("::")[0] + "::test_other")
    assert secret not in redacted_nodeid(redactor, nodeid)


def test_a_secret_registered_later_is_redacted_in_a_node_id_met_before() -> None:
    redactor = _redactor()
    nodeid = "tests/test_a.py::test_x[tok-Zq8vRt2Lp]"
    assert redacted_nodeid(redactor, nodeid) == nodeid
    redactor.register_secret("tok-Zq8vRt2Lp")
    assert "tok-Zq8vRt2Lp" not in redacted_nodeid(redactor, nodeid)
