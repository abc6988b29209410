"""A rule is compiled only once a text may hold its match, and a short text asks each rule
whether it matches before building its claims; neither changes any output.

A process used to compile every rule, and one alternation of them all (a prefilter), at its
first text: some 50 ms of a short pytest run. Now a rule's pattern is compiled the first time a
text holds one of its gate's literals (``RedactionRule.gate``, in the text's folded small
letters) or one it ``needs``; there is no prefilter, and a text of ``_SHORT_TEXT`` characters
or fewer skips each rule whose pattern ``search`` finds nothing in it.

The gates are exact when every match of a rule holds one of their literals. These tests prove it
from each rule's parsed pattern (a walk that reads only literals next to each other in every
way the pattern can match, through groups and every branch), check it on every match the rules
find in the corpora, the benchmark texts and random text, and compare the whole redactor with a
reference that has no gate and no short-text check: the same output, byte for byte. A gate
that misses a match, a prefix read past an optional character and a short-text check that
skips a rule that matches are caught.
"""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_redact_scanner import BENCHMARK_TEXTS, CORPUS, FOLD_SHIFTERS, IDENTITY, JOINED, PIECES

from pytest_specgate.evidence import Redactor, build_redactor
from pytest_specgate.evidence import _redact as redact
from pytest_specgate.evidence._nodeids import NodeIdRedactor
from pytest_specgate.evidence._redact import RedactionRule, _leading_literal, folded
from pytest_specgate.evidence._secret_rules import TOKEN_FORMATS

ENVIRONMENT = {"DB_PASSWORD": "Hunter2Hunter2"}


def _redactor() -> Redactor:
    """A fresh redactor (no rule compiled yet, so every gate is read), with a known value."""
    return build_redactor(Path("/srv/checkouts/specgate"), ["ACME-[0-9]{6}"], ENVIRONMENT, IDENTITY)


class Ungated(Redactor):
    """The reference: every rule searched at every text through its claims, as before the gates
    and the short-text check."""

    def _claims(self, text: str, changed: Iterable[tuple[int, int]] | None = None) -> list[redact.Claim]:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(redact, "_SHORT_TEXT", -1)
            return super()._claims(text, changed)


def _reference() -> Redactor:
    redactor = _redactor()
    return Ungated(tuple(replace(rule, gate=()) for rule in redactor.rules), redactor.secret_literals)


RULES = _redactor().rules
GATED = [rule for rule in RULES if rule.gate]
NEEDING = [rule for rule in RULES if rule.needs]
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_Items = list[tuple[object, object, int]]


def every_match_holds(pattern: str, literals: tuple[str, ...], *, folding: bool) -> bool:
    """Whether every match of ``pattern`` holds one of ``literals``: in its folded small letters
    (``folding``; a gate), or as written, what it looks at around it included (a ``needs``,
    checked on the whole text). Only characters the pattern matches one after the other as
    literals are read; a group is read on from what comes before it, every branch to the end."""
    parsed = sre_parse.parse(pattern)
    return _holds(_items(parsed.data, parsed.state.flags), literals, folding, "")


def _items(data: list[tuple[object, object]], flags: int) -> _Items:
    return [(op, av, flags) for op, av in data]


def _holds(items: _Items, literals: tuple[str, ...], folding: bool, run: str) -> bool:
    def found(text: str) -> bool:
        return any(literal in text for literal in literals)

    for index, (op, av, flags) in enumerate(items):
        rest = items[index + 1 :]
        letter = _literal(op, av, flags, folding)
        if letter is not None:
            run += letter
            if found(run):
                return True
        elif op is sre.IN and _few_literals(av):
            return all(
                _holds([(sre.LITERAL, code, flags), *rest], literals, folding, run)
                for _, code in av  # type: ignore[attr-defined]
            )
        elif op is sre.SUBPATTERN:
            _, add, remove, sub = av  # type: ignore[misc]
            return _holds(_items(sub.data, (flags | add) & ~remove) + rest, literals, folding, run)
        elif op is sre.ATOMIC_GROUP:
            return _holds(_items(av.data, flags) + rest, literals, folding, run)  # type: ignore[attr-defined]
        elif op is sre.BRANCH:
            return all(
                _holds(_items(branch.data, flags) + rest, literals, folding, run)
                for branch in av[1]  # type: ignore[index]
            )
        elif op in (sre.AT, sre.ASSERT_NOT):
            continue
        elif op is sre.ASSERT:
            if not folding and _holds(_items(av[1].data, flags), literals, folding, ""):  # type: ignore[index]
                return True
        elif op in _REPEATS and av[0] >= 1:  # type: ignore[index]
            if _holds(_items(av[2].data, flags), literals, folding, ""):  # type: ignore[index]
                return True
            run = ""
        else:
            run = ""
    return found(run)


def _few_literals(members: object) -> bool:
    """A class of a few single characters (``[nrt]``), read as a branch per character."""
    return len(members) <= 8 and all(kind is sre.LITERAL for kind, _ in members)  # type: ignore[arg-type, attr-defined]


def _literal(op: object, av: object, flags: int, folding: bool) -> str | None:
    """The one character ``op`` matches, as a gate reads it; None for anything else."""
    if op is sre.LITERAL:
        character = chr(av)  # type: ignore[arg-type]
        if folding:
            return character.lower()
        return character if not flags & re.IGNORECASE or character.lower() == character.upper() else None
    if op is sre.IN and folding:
        members = av  # type: ignore[assignment]
        if all(kind is sre.LITERAL for kind, _ in members):  # type: ignore[attr-defined]
            lowered = {chr(code).lower() for _, code in members}  # type: ignore[attr-defined]
            return lowered.pop() if len(lowered) == 1 else None
    return None


@pytest.mark.parametrize(
    ("pattern", "literals", "holds"),
    [
        (r"hf_[A-Za-z0-9]{30}", ("hf_",), True),
        (r"h(?<![a-z]h)f_(?:x{2}|y)", ("hf_",), True),
        (r"[aA](?i:(?<=a)ws)key", ("awsk",), True),
        (r"(?:ab|cd)ef", ("bef", "def"), True),
        (r"(?:ab|cd)ef", ("bef",), False),
        (r"ab?c", ("abc",), False),
        (r"a(?:b)?c", ("ac",), False),
        (r"x(?=secret)", ("secret",), False),
        (r"(?<=secret)x", ("secret",), False),
        (r"(?i)TOKEN", ("token",), True),
        (r"[KPJ](?:EY|AT)", ("ey", "at"), True),
        (r"[KPJ](?:EY|AT)", ("ey",), False),
        (r"x+yz", ("xyz",), False),
    ],
)
def test_the_proof_reads_only_what_every_match_holds(
    pattern: str, literals: tuple[str, ...], holds: bool
) -> None:
    assert every_match_holds(pattern, literals, folding=True) is holds


def test_what_a_rule_needs_may_be_what_it_looks_at_as_written() -> None:
    assert every_match_holds(r"(?<=<SECRET>)\.x+", ("<SECRET>",), folding=False)
    assert not every_match_holds(r"(?i)key", ("KEY",), folding=False)


@pytest.mark.parametrize("rule", GATED, ids=lambda rule: rule.name)
def test_every_match_of_a_gated_rule_holds_a_gate_literal(rule: RedactionRule) -> None:
    assert all(literal.isascii() and literal == literal.lower() for literal in rule.gate)
    assert every_match_holds(rule.source, rule.gate, folding=True)


@pytest.mark.parametrize("rule", NEEDING, ids=lambda rule: rule.name)
def test_every_match_of_a_rule_that_needs_literals_holds_one(rule: RedactionRule) -> None:
    assert every_match_holds(rule.source, rule.needs, folding=False)


def test_the_gates_cover_the_costly_rules() -> None:
    """The rules a short text seldom needs wait for their literal: every catalogue token (its
    prefix), their encoded forms, the private key, JWTs, flags, Bearer and the like."""
    gated = {rule.name for rule in GATED}
    assert {token.rule_id for token in TOKEN_FORMATS} <= gated
    assert {"encoded-token", "private-key", "jwt", "flag-value", "bearer", "auth-header", "path"} <= gated


@pytest.mark.parametrize(
    ("prefix", "gate"),
    [
        ("hf_", ("hf_",)),
        ("A(?:3T[A-Z0-9]|KIA|SIA)", ("a",)),
        (r"hooks\.slack\.com/(?:services|workflows)/", ("hooks.slack.com/",)),
        (r"discord(?:app)?\.com/", ("discord",)),
        ("gh[pousr]_", ("gh",)),
        ("ab?c", ("a",)),
        ("ab*c", ("a",)),
        ("ab{2}c", ("a",)),
        ("a?b", ()),
        ("ab|cd", ()),
        ("(?:ab)|cd", ()),
        ("[|]ab", ()),
        ("x[|]ab", ("x",)),
        ("PMAK-", ("pmak-",)),
    ],
)
def test_a_token_prefix_gives_the_literal_it_starts_with(prefix: str, gate: tuple[str, ...]) -> None:
    assert _leading_literal(prefix) == gate
    if gate:
        assert every_match_holds(prefix, gate, folding=True)


def _matches_hold_their_gate(rule: RedactionRule, text: str) -> list[str]:
    """Matches of ``rule`` in ``text`` whose folded form holds no gate literal."""
    missed = []
    for match in rule.pattern.finditer(text):
        small = folded(match.group(0))
        if small is not None and not any(literal in small for literal in rule.gate):
            missed.append(match.group(0)[:40])
    return missed


@pytest.mark.parametrize("rule", GATED, ids=lambda rule: rule.name)
def test_every_match_found_in_the_corpora_holds_a_gate_literal(rule: RedactionRule) -> None:
    texts = [*CORPUS, JOINED, *BENCHMARK_TEXTS]
    assert [missed for text in texts for missed in _matches_hold_their_gate(rule, text)] == []


def _pieces(text: str, size: int) -> list[str]:
    """``text`` cut into pieces a gate reads whole (under ``_GATED_CHARS``), at line breaks."""
    lines, pieces, piece = text.splitlines(keepends=True), [], ""
    for line in lines:
        if len(piece) + len(line) > size and piece:
            pieces.append(piece)
            piece = ""
        piece += line
    return [*pieces, piece]


def _agree(texts: list[str]) -> list[str]:
    """Texts a fresh gated redactor redacts otherwise than the reference."""
    differ = []
    for text in texts:
        if _redactor().text(text) != _reference().text(text):
            differ.append(text[:60])
    return differ


def test_the_gated_redactor_and_the_reference_agree_on_the_corpora_and_benchmark_texts() -> None:
    cut = [piece for text in BENCHMARK_TEXTS for piece in _pieces(text, 60_000)]
    lines = [line for text in BENCHMARK_TEXTS for line in text.splitlines()[::25]]
    assert _agree([*CORPUS, JOINED, *BENCHMARK_TEXTS, *cut, *lines]) == []


def test_one_redactor_meeting_the_corpus_one_text_after_another_agrees() -> None:
    """Rules compiled by one text are searched, not gated, at the next: the order of texts a
    process meets changes nothing either."""
    gated, reference = _redactor(), _reference()
    texts = [*CORPUS, *CORPUS[::-1]]
    assert [text[:60] for text in texts if gated.text(text) != reference.text(text)] == []


GATE_PIECES = [
    *PIECES, *FOLD_SHIFTERS, "-----BEGIN", "PRIVATE KEY-----", "MIIEpQIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi",
    "ip-10-0-3-7", "ey", "eyJrIjoi", "aGZf", "68665f", "sk-", "sk_live_", "AKIA", "xoxb-", "dp.pt.",
    "hooks.slack.com/services/",
    "SECRET", "TOKEN", "KEY", "PASSWD", "WEBHOOK_URL", "://u:p@h", "Authorization: Basic ", "--api-key ",
    "Hunter2Hunter2", "hf_Zq8Wx2Ec4Rv6Tb8Yn0Um2Ik4Ol6Pa8Sd0F", "/home/", "/Users/", "-u ",
]


@given(st.lists(st.sampled_from(GATE_PIECES) | st.text(max_size=4), max_size=40).map("".join))
def test_the_gated_redactor_and_the_reference_agree_on_random_text(text: str) -> None:
    assert _agree([text]) == []
    assert [rule.name for rule in GATED if _matches_hold_their_gate(rule, text)] == []


def _compiled(redactor: Redactor) -> set[str]:
    return {rule.name for rule in redactor.rules if "pattern" in rule.__dict__}


def test_a_plain_text_compiles_only_the_rules_it_may_need() -> None:
    redactor = _redactor()
    assert _compiled(redactor) == set()
    redactor.text("tests/test_x.py::test_addition PASSED: 1 + 1 == 2")
    waiting = {"huggingface-access-token", "encoded-token", "private-key", "jwt", "bearer", "flag-value"}
    assert not _compiled(redactor) & waiting
    assert redactor.text("token ghp_Zq8Wx2Ec4Rv6Tb8Yn0Um2Ik4Ol6Pa8Sd0Fg1Hj") == "token <SECRET>"
    assert "github-pat, github-oauth, github-app-token, github-refresh-token" in _compiled(redactor)


def test_a_short_text_check_that_skips_a_rule_that_matches_is_caught() -> None:
    """Planted bug: the short-text check asks a rule whether its pattern matches the text's
    first half only; a token in the second half goes out, and the comparison says so."""
    text = "a line of a log, then the token ghp_Zq8Wx2Ec4Rv6Tb8Yn0Um2Ik4Ol6Pa8Sd0Fg1Hj"

    class HalfSearched(RedactionRule):
        @property
        def pattern(self) -> re.Pattern[str]:
            compiled = re.compile(self.source)
            return type("Half", (), {"search": lambda _, t: compiled.search(t, 0, len(t) // 2),
                                     "finditer": compiled.finditer, "match": compiled.match})()  # type: ignore[return-value]

    redactor = _redactor()
    planted = Redactor(tuple(HalfSearched(**{f: getattr(rule, f) for f in rule.__dataclass_fields__})
                             for rule in redactor.rules), redactor.secret_literals)
    assert planted.text(text) != _reference().text(text)
    assert _agree([text]) == []


def test_a_node_id_redactor_compiles_no_rule_before_its_first_id() -> None:
    redactor = _redactor()
    nodeids = NodeIdRedactor(redactor)
    assert _compiled(redactor) == set()
    assert nodeids("tests/test_x.py::test_addition_of_two_numbers") == (
        "tests/test_x.py::test_addition_of_two_numbers"
    )
    assert not _compiled(redactor) & {"huggingface-access-token", "encoded-token", "private-key", "jwt"}


def test_a_gate_that_misses_a_match_is_caught() -> None:
    """Planted bug: the Hugging Face token rule gated on a literal its tokens do not hold."""
    rule = next(rule for rule in RULES if rule.name == "huggingface-access-token")
    wrong = replace(rule, gate=("hf-",))
    assert not every_match_holds(wrong.source, wrong.gate, folding=True)
    text = "HF_TOKEN=x hf_Zq8Wx2Ec4Rv6Tb8Yn0Um2Ik4Ol6Pa8Sd0F"
    assert _matches_hold_their_gate(wrong, text)
    redactor = _redactor()
    broken = Redactor(tuple(replace(other, gate=("hf-",)) if other.name == rule.name else other
                            for other in redactor.rules))
    assert broken.text(f"log {text[11:]} end") != _reference().text(f"log {text[11:]} end")
