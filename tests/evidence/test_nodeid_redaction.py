"""Node ids redacted once per run, with their file part once per file and the common honest test
part recognised without a rule pass: the same text as a whole-id pass, on chosen and on random
ids, and nothing planted anywhere in an id survives."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_specgate.evidence import LocalIdentity, build_redactor
from pytest_specgate.evidence._nodeids import NodeIdRedactor, settled_by_shape
from pytest_specgate.evidence._redact import RedactionRule, Redactor

IDENTITY = LocalIdentity(
    user_names=("alice-ops", "builder", "ci_runner2"), host_names=("buildbox-7",),
    home_dirs=("/home/alice-ops",),
)
HF_TOKEN = "hf_" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3f"
GITHUB_TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"
ONE_CASE_HF_TOKEN = "hf_" + "qwertyuiopasdfghjklzxcvbnmqwer"
"""A vendor token whose body is one kind of character: only the joined rule search sees it."""
NPM_TOKEN = "npm_" + "k" * 36


def _redactor(extra: tuple[str, ...] = ()) -> Redactor:
    return build_redactor(Path("/srv/repo"), extra, {}, IDENTITY)


HONEST = [
    "tests/test_generated_000.py::test_trivial_1",
    "tests/test_generated_000.py::test_trivial_1001",
    "tests/test_overhead.py::test_evidence_overhead_with_many_acceptance_criteria_0042",
    "tests/test_a.py::TestSpec::test_b[1-2]",
    "tests/test_a.py::TestEvidenceBundle::test_a_record_is_written_once_per_ac[params0]",
    "tests/test_a.py::TestEvidenceBundleWriter::test_x",
    "acceptance/spec028/test_ac10.py::test_speedup[m4-16gb]",
    "acceptance/spec028/test_ac10.py::test_speedup[0.5-True-mock]",
    "tests/test_a.py::test_deadbeefcafebabedeadbeefcafe_12345678901234567890",
]


@pytest.mark.parametrize(
    "nodeid",
    [
        *HONEST,
        "tests/test_a.py::cafe_test",
        "tests/test_a.py::test_ip[10.0.0.1]",
        "tests/test_a.py::test_x[alice-ops]",
        "tests/test_a.py::test_x_builder_1",
        "tests/test_a.py::test_on_ci_runner2_only",
        "README.txt::README.txt",
        "tests/test_a.py",
        "tests/test_a.py::",
        "/home/alice-ops/repo/t.py::test_x",
        "tests/test_a.py:://user:hunter22@host/x",
        f"tests/test_a.py::test_x_{ONE_CASE_HF_TOKEN}",
    ],
)
def test_a_node_id_reads_as_the_whole_id_pass_gives_it(nodeid: str) -> None:
    assert NodeIdRedactor(_redactor())(nodeid) == _redactor().text(nodeid)


@pytest.mark.parametrize("nodeid", HONEST)
def test_the_common_honest_shape_takes_no_rule_pass(nodeid: str) -> None:
    """What makes node ids cheap: a function, class and parametrize id of plain words."""
    node_ids = NodeIdRedactor(_redactor())
    assert node_ids.unchanged_by_every_rule(nodeid.partition(".py::")[2])
    assert node_ids(nodeid) == nodeid


@pytest.mark.parametrize(
    "test_part",
    [
        "test_aB3dE5gH7jK9mN1pQ3sT5",  # generated: a long run whose pieces change kind
        f"test_x_{ONE_CASE_HF_TOKEN}",  # one kind per piece, but a vendor's prefix
        "test_x[a/b]",
        "test_x[a=b]",
        "test_x[a b]",
        "test_x[%5F]",
        "test_x[<SECRET>]",
        "test_é",
        "test_x[alice-ops]",
    ],
)
def test_a_test_part_outside_the_proven_shape_takes_the_full_pass(test_part: str) -> None:
    assert not NodeIdRedactor(_redactor()).unchanged_by_every_rule(test_part)


@pytest.mark.parametrize(
    ("test_part", "settled"),
    [
        ("test_trivial_1001", True),
        ("test_deadbeefcafebabedeadbeefcafe_12345678901234567890", True),
        ("TestEvidenceBundle::test_a", False),  # camel case: generic-token itself is asked
        ("test_x[deadbeef-1234-5678-9abc-def012345678]", False),  # a "-" inside a long run
    ],
)
def test_which_runs_the_shape_settles(test_part: str, settled: bool) -> None:
    assert settled_by_shape(test_part) is settled


@pytest.mark.parametrize(
    ("nodeid", "secret"),
    [
        (f"tests/test_a.py::test_x[{HF_TOKEN}]", HF_TOKEN),
        (f"tests/test_a.py::TestA::test_b[{GITHUB_TOKEN}-1]", GITHUB_TOKEN),
        ("tests/test_a.py::test_login[password=hunter22]", "hunter22"),
        ("tests/test_a.py::test_x[Password:hunter22]", "hunter22"),  # lines_with reads small letters
        ("tests/test_a.py::test_x[Zq8vRt2LpX4...]", "Zq8vRt2LpX4"),  # a rule that needs "..."
        (f"tests/test_{GITHUB_TOKEN}.py::test_x", GITHUB_TOKEN),
        ("/home/alice-ops/repo/t.py::test_x", "alice-ops"),
        ("tests/test_a.py::test_x[alice-ops]", "alice-ops"),
        ("tests/test_a.py::test_on_ci_runner2_only", "ci_runner2"),
        ("tests/test_a.py:://user:hunter22@host/x", "hunter22"),
        ("tests/test_a.py::test_x_aB3dE5gH7jK9mN1pQ3sT5", "aB3dE5gH7jK9mN1pQ3sT5"),
        (f"tests/test_a.py::test_x_{ONE_CASE_HF_TOKEN}", ONE_CASE_HF_TOKEN),
        (f"tests/test_a.py::test_x[{ONE_CASE_HF_TOKEN}]", ONE_CASE_HF_TOKEN),
        (f"tests/test_a.py::TestA::test_{NPM_TOKEN}", NPM_TOKEN),
        # Gated rules: each asked once its gate literal shows in small letters (``akia`` -> ``a``).
        ("tests/test_a.py::test_x[AKIAZ2Q7R4T6V8X0Y3W5]", "AKIAZ2Q7R4T6V8X0Y3W5"),
        ("tests/test_a.py::test_x[xoxb-123456789012-abcdefghij]", "123456789012-abcdefghij"),
        ("tests/test_a.py::test_x[glpat-abcdefghij0123456789]", "abcdefghij0123456789"),
    ],
)
def test_nothing_planted_in_a_node_id_survives(nodeid: str, secret: str) -> None:
    node_ids = NodeIdRedactor(_redactor())
    # The file part is met first on its own, as a hundred tests of one file meet it.
    node_ids(nodeid.partition("::")[0] + "::test_other")
    assert secret not in node_ids(nodeid)


def test_a_secret_registered_later_is_redacted_in_a_node_id_met_before() -> None:
    redactor = _redactor()
    node_ids = NodeIdRedactor(redactor)
    nodeid = "tests/test_a.py::test_x[tok-Zq8vRt2Lp]"
    assert node_ids(nodeid) == nodeid
    redactor.register_secret("tok-Zq8vRt2Lp")
    assert "tok-Zq8vRt2Lp" not in node_ids(nodeid)
    redactor.register_secret("trivial_1001")
    assert node_ids("tests/t.py::test_trivial_1001") == "tests/t.py::test_<SECRET>"


def test_a_project_pattern_is_searched_in_a_plain_test_part() -> None:
    """Every rule but generic-token is searched, a project's own ``[tool.specgate.redact]``
    patterns and any rule added later too: the proof covers one rule, not a list of them."""
    node_ids = NodeIdRedactor(_redactor(("trivial_[0-9]+",)))
    assert node_ids("tests/t.py::test_trivial_1001") == "tests/t.py::test_<REDACTED>"


@pytest.mark.parametrize("test_part", ["test_XYZ1234", "test_xyz1234", "test_a_Abc1234"])
def test_a_gated_rule_is_asked_once_any_of_its_gate_literals_shows_in_small_letters(test_part: str) -> None:
    """A rule's gate literals are small letters, read in the test part's small-letter form, and
    any one of them (not only the first) sends the test part to the rule; a rule added later is
    asked as the catalogue's are."""
    plain = _redactor()
    gated = RedactionRule("planted", r"(?i)(?:abc|xyz)[0-9]{4}", "<PLANTED>", gate=("abc", "xyz"))
    redactor = Redactor((*plain.rules, gated), plain.secret_literals)
    nodeid = f"tests/t.py::{test_part}"
    assert NodeIdRedactor(redactor)(nodeid) == redactor.text(nodeid)
    assert "<PLANTED>" in redactor.text(nodeid)


def test_each_node_id_is_redacted_once() -> None:
    met: list[str] = []

    class Counting(Redactor):
        def text(self, text: str) -> str:
            met.append(text)
            return super().text(text)

    plain = _redactor()
    node_ids = NodeIdRedactor(Counting(plain.rules, plain.secret_literals))
    nodeid = "tests/test_a.py::test_x[a/b]"
    assert [node_ids(nodeid) for _ in range(3)] == [plain.text(nodeid)] * 3
    assert met == ["tests/test_a.py", "test_x[a/b]"]


WORDS = st.sampled_from([
    "test", "trivial", "hf", "ghp", "sk", "npm", "api", "key", "token", "password", "secret", "AKIA",
    "SK", "xoxb", "glpat", "dapi", "pul", "AIza", "eyJ", "alice", "ops", "builder", "buildbox", "srv",
    "repo", "ip", "sha256", "deadbeef", "cafe",
])
ONE_KIND = (
    st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=40)
    | st.text("abcdef", min_size=1, max_size=40)
    | st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=40)
    | st.text("0123456789", min_size=1, max_size=40)
)
MIXED = st.text("abcdefABCDEFxyzXYZ0123456789", min_size=1, max_size=40)
PIECE = WORDS | ONE_KIND | MIXED
NAME = st.lists(PIECE, min_size=1, max_size=6).map("_".join).map(lambda name: "t" + name)
PARAMETER = st.lists(PIECE | st.sampled_from(["-", ".", "_", "/", "=", ":", " "]), max_size=8).map("".join)
TEST_PART = st.tuples(
    st.lists(NAME, min_size=1, max_size=3).map("::".join),
    st.none() | PARAMETER,
).map(lambda parts: parts[0] if parts[1] is None else f"{parts[0]}[{parts[1]}]")


@given(TEST_PART)
def test_the_node_id_redaction_and_the_whole_id_pass_agree_on_random_ids(test_part: str) -> None:
    nodeid = f"tests/test_generated.py::{test_part}"
    assert NodeIdRedactor(_redactor())(nodeid) == _redactor().text(nodeid)
