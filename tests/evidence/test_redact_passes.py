"""A pass after the first searches only the neighbourhood of what the pass before it changed.

The redactor repeats its rule pass until nothing changes. Every pass after the first reads only
the lines a replacement touched (for rules that stay within a line), and those lines joined to
the lines a match can carry on into (for rules that cross a line break): ``_Neighbourhood`` in
pytest_specgate/evidence/_redact.py holds the argument why nothing outside can change. These tests
check the result against passes that read the whole text: the same claims pass for pass, and the
same output, on the benchmark's adversarial and ordinary text, the corpora and random text; they
check the two facts the argument rests on for every rule (a ``line`` rule's pattern never matches
a line break; a ``joined`` rule's match holds one only after a line that may join the next); and
they show the comparison fails when the neighbourhood leaves out what it must hold.

The redactor reads a short text (``_SHORT_TEXT``) whole in every pass, which is the reference
itself; here every text is read as a long one is, so short random texts try the neighbourhood.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_redact_scanner import BENCHMARK_TEXTS, CORPUS, JOINED, PIECES, _redactor, reads_across_lines

from pytest_specgate.evidence import Redactor
from pytest_specgate.evidence import _redact as redact
from pytest_specgate.evidence._redact import RedactionRule, _may_join_next, _replaced_with_spans


class WholePasses(Redactor):
    """The reference: every pass reads the whole text, as the first one does."""

    def _claims(self, text: str, changed: object = None) -> list[redact.Claim]:
        return super()._claims(text, None)


def _whole(redactor: Redactor) -> Redactor:
    return WholePasses(redactor.rules, redactor.secret_literals)


@pytest.fixture(autouse=True, scope="module")
def _every_text_read_as_a_long_one() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(redact, "_SHORT_TEXT", -1)
        yield


def test_a_short_text_is_read_whole_in_every_pass_as_a_long_one_is_near_its_changes() -> None:
    """With the module's setting undone: a short text's passes read all of it, which gives what
    the passes near the changes give (the rest of this module compares those with whole passes)."""
    text = "FAILED /srv/checkouts/specgate/tests/test_a.py - password=Hunter2Hunter2 \u0041PI_KEY=x"
    calls: list[object] = []

    class Counted(Redactor):
        def _claims(self, text: str, changed: object = None) -> list[redact.Claim]:
            calls.append(changed)
            return super()._claims(text, changed)  # type: ignore[arg-type]

    base = _redactor()
    near = base._text(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(redact, "_SHORT_TEXT", 4_096)
        assert Counted(base.rules, base.secret_literals)._text(text) == near
    assert len(calls) > 1 and set(calls) == {None}


def _second_passes_agree(redactor: Redactor, text: str) -> bool:
    """Whether the pass after the first replaces the same spans by the same text, read near its
    changes or whole (a placeholder's claim of itself changes nothing: a pass near the changes
    leaves out those far from them)."""
    first, changed = _replaced_with_spans(text, redactor._claims(text))

    def changes(claims: list[redact.Claim]) -> list[redact.Claim]:
        return [claim for claim in claims if first[claim[0] : claim[1]] != claim[2]]

    return changes(redactor._claims(first, changed)) == changes(redactor._claims(first))


RULES = _redactor().rules
LINE_RULES = [rule for rule in RULES if rule.scope == "line"]
JOINED_RULES = [rule for rule in RULES if rule.scope == "joined"]

JOINING_PIECES = [
    *PIECES, "\r\n", "\n\n", "\n  ", "\n\t", "ghp_aBcDeFgHiJ\n", "kLmNoPqRsTuVwXyZ12345", "hf_", "QwErTy9",
    "Authorization: ", "Bearer\n", "user=\n", "root", "-----BEGIN RSA PRIVATE KEY-----\n",
    "-----END RSA PRIVATE KEY-----", "MIIEpQIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi" * 2 + "\n", "eyJ", ".\n",
    "<SECRET>", "<TOKEN>", "<HOST>", "\\u005f", "%5F", "ops\\u0040corp.example.org", "sha256:", "rev:\n",
    "AKIA", "Z9x8C7v6B5n4M3", "token=", "203.0.113.9", "/home/ops-user/", "bench-host",
]


def test_the_benchmark_texts_and_the_corpora_are_redacted_as_by_whole_passes() -> None:
    redactor, reference = _redactor(), _whole(_redactor())
    texts = [*CORPUS, JOINED, *BENCHMARK_TEXTS]
    assert [text[:60] for text in texts if redactor._text(text) != reference._text(text)] == []
    assert [text[:60] for text in texts if not _second_passes_agree(redactor, text)] == []


@given(st.lists(st.sampled_from(JOINING_PIECES) | st.text(max_size=4), max_size=40).map("".join))
def test_a_pass_near_the_changes_claims_what_a_whole_pass_claims_on_random_text(text: str) -> None:
    redactor = _redactor()
    assert _second_passes_agree(redactor, text)
    assert redactor._text(text) == _whole(redactor)._text(text)


@given(
    st.lists(st.sampled_from(BENCHMARK_TEXTS[0].split("\n")[:400]), min_size=1, max_size=30),
    st.lists(st.sampled_from(JOINING_PIECES), max_size=12),
)
def test_a_pass_near_the_changes_claims_what_a_whole_pass_claims_on_adversarial_lines(
    lines: list[str], extra: list[str]
) -> None:
    """Lines of the adversarial benchmark (backtracking runs, planted secrets) in random order,
    with pieces that join lines between them."""
    text = "\n".join(lines[: len(lines) // 2] + extra + lines[len(lines) // 2 :])
    redactor = _redactor()
    assert _second_passes_agree(redactor, text)
    assert redactor._text(text) == _whole(redactor)._text(text)


@pytest.mark.parametrize("rule", LINE_RULES, ids=lambda rule: rule.name)
def test_a_rule_searched_only_on_changed_lines_never_reads_across_a_line(rule: RedactionRule) -> None:
    assert not reads_across_lines(rule.pattern)


def _breaks_held(rule: RedactionRule, text: str) -> list[int]:
    """The line breaks held by a match of ``rule`` found from any position of ``text``."""
    held = set()
    for start in range(len(text)):
        match = rule.pattern.match(text, start)
        if match is not None:
            held.update(index for index in range(match.start(), match.end()) if text[index] == "\n")
    return sorted(held)


def _joins(text: str, line_break: int) -> bool:
    return _may_join_next(text, text.rfind("\n", 0, line_break) + 1, line_break)


@pytest.mark.parametrize("rule", JOINED_RULES, ids=lambda rule: rule.name)
def test_a_joined_rule_holds_a_line_break_only_after_a_line_that_may_join(rule: RedactionRule) -> None:
    texts = [text for text in CORPUS if "\n" in text] + [
        "ghp_aBcDeFgHiJ\n  kLmNoPqRsTuVwXyZ12345", "Authorization:\n Bearer\n\n Xb7Kp2Lm9Qr4St6",
        "x = 'a'\nb", "eyJhbGciOiJIUzI1NiJ9\n.\neyJzdWIiOiIxMjM0\n.\nsig", "tok <SECRET>ab\n Xb7Kp2Lm9Qr4",
        "(x)\ny;\nz",
    ]
    breaks = [(text, index) for text in texts for index in _breaks_held(rule, text)]
    assert [(text[:40], index) for text, index in breaks if not _joins(text, index)] == []


@pytest.mark.parametrize(
    ("line", "joins"),
    [
        ("ghp_aBcDeF", True), ("Bearer", True), ("password =", True), ("'", True), ("", True), ("   ", True),
        ("x <SECRET>", True), ("x <TOKEN>  ", True), ("mail <EMAIL>", False), ("f(x);", False), ("}", False),
        ("host <HOST>", False), ("a, b,", False),
    ],
)
def test_the_line_end_test_tells_a_line_a_match_may_carry_on_from(line: str, joins: bool) -> None:
    assert _may_join_next(line + "\nnext", 0, len(line)) is joins


TAIL_ON_THE_NEXT_LINE = "log Xb7Kp2Lm9Qr4St6Vw8Yz0.ab\nQwErTy9876ZxCv (wrapped)"
"""The first pass replaces the token's head (a generic token); the second finds its tail on the
next line, which no replacement touched (``line-break-tail``, a ``joined`` rule)."""


def test_a_tail_on_a_line_no_replacement_touched_is_found_by_the_pass_after() -> None:
    redactor = _redactor()
    assert redactor.text(TAIL_ON_THE_NEXT_LINE) == "log <SECRET>.ab\n<SECRET> (wrapped)"
    assert _second_passes_agree(redactor, TAIL_ON_THE_NEXT_LINE)


def test_the_comparison_fails_when_joined_rules_miss_the_lines_a_break_joins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(redact._Neighbourhood, "joined", lambda self: self.lines)
    assert not _second_passes_agree(_redactor(), TAIL_ON_THE_NEXT_LINE)


def test_the_comparison_fails_when_the_neighbourhood_misses_a_changed_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = redact._Neighbourhood.touch

    def first_only(self: redact._Neighbourhood, spans: object) -> None:
        original(self, list(spans)[:1])  # type: ignore[call-overload]

    monkeypatch.setattr(redact._Neighbourhood, "touch", first_only)
    texts = [*CORPUS, JOINED, *BENCHMARK_TEXTS]
    assert not all(_second_passes_agree(_redactor(), text) for text in texts)


def test_a_search_after_a_match_that_ran_into_a_claim_stays_within_the_match_lines() -> None:
    """A gap can run on for pages: the rule searches again only the lines its match spans."""
    rule = RedactionRule("word", r"[a-z]+", "<W>", scope="line")
    text = "ab<X>cd\n" + "\n".join(["efg"] * 3)
    claims, added = redact._claim(text, [(2, 5, "<X>")], rule, [((0, 7, "<W>"), 0, 7)])
    assert [claim[:2] for claim in added] == [(0, 2), (5, 7)]
    assert claims == sorted([(2, 5, "<X>"), *added])
