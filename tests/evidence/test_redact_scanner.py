"""The line scan in front of the redaction rules (``RedactionRule.lines_with``) changes nothing.

A rule with ``lines_with`` searches only the lines that pattern finds in the text's lowered form.
That is the same as searching the whole text when two things hold, and these tests prove both
for every such rule: its pattern never reads across a line break (checked on its parsed form:
no part of it matches a line break, and no ``$``/``\\Z`` looks for the end of the text), and every
line it claims in matches its ``lines_with`` (checked against the plain rule-by-rule search on
the catalogue's and the independent corpus, the benchmark's texts and random text). The whole
redactor is compared with a reference that has no line scan: the same output, byte for byte.
"""

from __future__ import annotations

import base64
import json
import re
import re._compiler as sre_compile
import re._constants as sre
import re._parser as sre_parse
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from vendor_formats import CONTEXT_FORMS, corpus

from benchmarks.redaction import adversarial_text, ordinary_text
from pytest_specgate.evidence import LocalIdentity, Redactor, build_redactor
from pytest_specgate.evidence._redact import (
    _PROTECTED,
    RedactionRule,
    _encoded_patterns,
    _grouped_by_first_character,
    folded,
)
from pytest_specgate.evidence._secret_rules import ENCODED_PREFIXES, TOKEN_FORMATS

IDENTITY = LocalIdentity(
    user_names=("ops-user", "root"), host_names=("bench-host",), home_dirs=("/home/ops-user",)
)
CORPUS_FILE = Path(__file__).parent / "data" / "secret_corpus.json"


def _redactor() -> Redactor:
    return build_redactor(Path("/srv/checkouts/specgate"), ["ACME-[0-9]{6}"], {}, IDENTITY)


def _reference(redactor: Redactor) -> Redactor:
    """The same rules searching the whole text each, as before the line scan."""
    rules = tuple(replace(rule, lines_with=None) for rule in redactor.rules)
    return Redactor(rules, redactor.secret_literals)


GATED = [rule for rule in _redactor().rules if rule.lines_with is not None]
_UNSAFE_ENDS = {sre.AT_END, sre.AT_END_STRING}


def reads_across_lines(pattern: re.Pattern[str]) -> bool:
    """Whether some part of ``pattern`` can match a line break, or it can match empty, or it
    asks where the text ends (``$`` outside multi-line mode, ``\\Z``): each would let a search
    of one line differ from a search of the whole text."""
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    return parsed.getwidth()[0] == 0 or _crosses(parsed.data, pattern.flags, parsed.state)


def _crosses(items: list[tuple[object, object]], flags: int, state: sre_parse.State) -> bool:
    for op, av in items:
        if op is sre.SUBPATTERN:
            _, add, remove, sub = av  # type: ignore[misc]
            if _crosses(sub.data, (flags | add) & ~remove, state):
                return True
        elif op is sre.BRANCH:
            if any(_crosses(branch.data, flags, state) for branch in av[1]):  # type: ignore[index]
                return True
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            if _crosses(av[2].data, flags, state):  # type: ignore[index]
                return True
        elif op is sre.ATOMIC_GROUP:
            if _crosses(av.data, flags, state):  # type: ignore[attr-defined]
                return True
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            if _crosses(av[1].data, flags, state):  # type: ignore[index]
                return True
        elif op is sre.GROUPREF_EXISTS:
            if any(branch is not None and _crosses(branch.data, flags, state) for branch in av[1:]):  # type: ignore[index]
                return True
        elif op is sre.AT:
            if av in _UNSAFE_ENDS and not flags & re.MULTILINE:
                return True
        elif op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            leaf = sre_parse.SubPattern(state, [(op, av)])
            if sre_compile.compile(leaf, flags).match("\n"):
                return True
        else:
            return True
    return False


@pytest.mark.parametrize(
    ("pattern", "crosses"),
    [
        (r"key[=:][^\s]+", False),
        (r"(?m:^[ \t]*login[ \t]+(\S+)[ \t]*$)", False),
        (r"a.b", False),
        (r"a\s+b", True),
        (r"a[^x]b", True),
        (r"(?s:a.b)", True),
        (r"ab$", True),
        (r"ab\Z", True),
        (r"a(?=[^x])", True),
        (r"(?<=\n)a", True),
        (r"a*", True),
    ],
)
def test_the_line_check_tells_a_pattern_that_crosses_a_line(pattern: str, crosses: bool) -> None:
    assert reads_across_lines(re.compile(pattern)) is crosses


def test_the_rules_with_a_line_scan_are_the_costly_ones() -> None:
    assert {rule.name for rule in GATED} >= {
        "keyword-value", "high-entropy-key-value", "cut-token", "joined-token", "escaped-break-token",
        "email", "ipv4", "ipv6", "path-identity", "home", "rootdir", "user", "host",
    }


@pytest.mark.parametrize("rule", GATED, ids=lambda rule: rule.name)
def test_a_rule_with_a_line_scan_never_reads_across_a_line(rule: RedactionRule) -> None:
    assert rule.lines_with is not None
    assert not reads_across_lines(rule.pattern)
    assert not reads_across_lines(rule.lines_with)


def _corpus_texts() -> list[str]:
    entries = json.loads(CORPUS_FILE.read_text(encoding="utf-8"))["entries"]
    texts = [entry["text"] for entry in entries]
    texts += [form.format(token=planted.token) for planted in corpus() for form in CONTEXT_FORMS]
    texts += [
        "paſſword = hunter2hunter2", "KEY=Xb7Kp2Lm9Qr4St6Vw8", "tOKEN: 'Zq1Wx2Ec3Rv4Tb5Yn6'",
        "İ user=ops-user at bench-host:22 pw=ſecretſecret", "cookıe=aB3dE5gH7jK9mN1pQ3sT",
        "mail ops@corp.example.org from 203.0.113.9 and 2001:db8::1 /home/ops-user/x",
        "C:\\Users\\ops-user\\AppData token...Xb7Kp2Lm9Qr4 <SECRET>.Xb7Kp2Lm9Qr4St6 a\\nb",
        "machine api.example.com login ops password hunter2hunter2\n  password s3cr3tval\n",
        "pin=Xb7Kp2Lm9Qr4", "otp: 83920411xQ", "<TOKEN>.Xb7Kp2Lm9Qr4St6", "from fe80::1 on",
        "via fe80::1ff:fe23:4567:890a",
        "AWS secret key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'",
    ]
    return texts


CORPUS = _corpus_texts()
JOINED = "\n".join(text for text in CORPUS if folded(text) is not None)
"""The corpus as one text (a text whose lowered form is longer is searched whole: left out)."""
BENCHMARK_TEXTS = [adversarial_text(150_000)[0], ordinary_text(150_000)]


def _claims_agree(rule: RedactionRule, text: str) -> bool:
    return list(rule.claims_in_text(text, folded(text))) == list(rule.claims(text, 0, len(text)))


@pytest.mark.parametrize("rule", GATED, ids=lambda rule: rule.name)
def test_a_line_scan_finds_every_claim_of_its_rule(rule: RedactionRule) -> None:
    texts = [*CORPUS, JOINED, *BENCHMARK_TEXTS]
    assert [text[:60] for text in texts if not _claims_agree(rule, text)] == []


def test_the_redactor_and_its_reference_agree_on_the_corpora() -> None:
    scanner, reference = _redactor(), _reference(_redactor())
    texts = [*CORPUS, JOINED, *BENCHMARK_TEXTS]
    assert [text[:60] for text in texts if scanner.text(text) != reference.text(text)] == []


PIECES = [
    "password", "PASSWORD", "Api-Key", "x-auth-token", "session", "aws", "AWS_SECRET", "token",
    "=", ": ", "=> ", "'", '"', " ", "\n", "\t", "...", "…", "<SECRET>", "<TOKEN>", "\\n", "\\x41", "%5F",
    "@", "corp.example.org", "203.0.113.", "::", "2001:db8:", "/home/ops-user", "/srv/checkouts/specgate",
    "C:\\Users\\", "ops-user", "OPS-USER", "bench-host", "root", "~", "ſ", "K", "ı", "İ", "Σ",
    "Xb7Kp2Lm9Qr4St6Vw8Yz0", "aB3dE5gH7jK9", "hf_", "ghp_", "eyJhbGciOiJIUzI1NiJ9", "machine ", "login ",
    "?sig=", "&token=", "--password ", "-u ops:", "ACME-123456", "Bearer ",
]


@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=40).map("".join))
def test_the_redactor_and_its_reference_agree_on_random_text(text: str) -> None:
    assert _redactor().text(text) == _reference(_redactor()).text(text)
    assert [rule.name for rule in GATED if not _claims_agree(rule, text)] == []


FOUND_BEFORE = [rule for rule in _redactor().rules if rule.found_before is not None]
PEM_LINE = "MIIEpQIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi+Xb7Kp2Lm9Qr4St6Vw8Yz0AbCdEfGh1234"


def _found_before_agrees(rule: RedactionRule, text: str) -> bool:
    plain = replace(rule, found_before=None)
    return list(rule.claims(text, 0, len(text))) == list(plain.claims(text, 0, len(text)))


def test_a_rule_found_from_what_follows_it_finds_what_its_plain_search_finds() -> None:
    assert [rule.name for rule in FOUND_BEFORE] == ["pem-body", "line-end-head"]
    texts = [*CORPUS, JOINED, *BENCHMARK_TEXTS, "a Xb7Kp2Lm9\r\n  <SECRET> k9Zq\n<TOKEN>\nab\n<SECRET>",
             "k " + PEM_LINE[:70] + "\r\n  " + PEM_LINE + "\n" + PEM_LINE[5:] + "\n" + PEM_LINE + "==\n"]
    for rule in FOUND_BEFORE:
        assert [text[:60] for text in texts if not _found_before_agrees(rule, text)] == []


@given(st.lists(st.sampled_from([*PIECES, "\r\n", "\n  ", "k9Zq", "Xb7Kp2Lm9Qr4St6V", PEM_LINE, PEM_LINE[:62],
                                 PEM_LINE[:40]]) | st.text(max_size=3), max_size=40).map("".join))
def test_a_rule_found_from_what_follows_it_agrees_on_random_text(text: str) -> None:
    assert [rule.name for rule in FOUND_BEFORE if not _found_before_agrees(rule, text)] == []


def test_a_search_from_what_follows_that_looks_too_little_back_is_caught() -> None:
    rules = {rule.name: rule for rule in FOUND_BEFORE}
    head, pem = rules["line-end-head"], rules["pem-body"]
    assert not _found_before_agrees(replace(head, longest=4), "a Xb7Kp2Lm9\n<SECRET>")
    assert not _found_before_agrees(replace(pem, longest=60), PEM_LINE + "\n" + PEM_LINE + "\n")


def test_a_line_scan_that_misses_a_line_is_caught() -> None:
    """The agreement checks can fail: a rule scanning for the wrong literal misses claims."""
    redactor = _redactor()
    broken = Redactor(
        tuple(
            replace(rule, lines_with=re.compile("zz-no-such-word")) if rule.name in ("email", "keyword-value")
            else rule
            for rule in redactor.rules
        )
    )
    text = JOINED
    assert broken.text(text) != _reference(redactor).text(text)
    gated = [rule for rule in broken.rules if rule.lines_with is not None]
    missed = [rule.name for rule in gated if not _claims_agree(rule, text)]
    assert missed == ["keyword-value", "email"]


def test_text_whose_lowered_form_is_longer_is_searched_whole() -> None:
    text = "İ password=hunter2hunter2"
    assert folded(text) is None
    assert "hunter2" not in _redactor().text(text)
    assert folded("ſecret KEY") == "secret key"


ENCODED_LITERALS = [
    *(literal for token in TOKEN_FORMATS for literal in token.encodable), *ENCODED_PREFIXES,
]
PLAIN_ENCODED = re.compile("|".join(_encoded_patterns(ENCODED_LITERALS)))
GROUPED_ENCODED = re.compile(_grouped_by_first_character(_encoded_patterns(ENCODED_LITERALS)))
PLAIN_PROTECTED = re.compile(
    r"<REDACTED>|<SECRET>|<HF_TOKEN>|<TOKEN>|<EMAIL>|<PATH>|<HOME>|<IP>|<HOST>|<USER>"
    r"|\b(?:ac|bundle)-sha256=[0-9a-f]{64}\b"
)
"""The two patterns as first written: one branch per encoded prefix, ``\\b`` before the digests."""
REWRITTEN = [(PLAIN_ENCODED, GROUPED_ENCODED), (PLAIN_PROTECTED, _PROTECTED)]
DIGEST = "0123456789abcdef" * 4


def _encoded_forms(literal: str) -> list[str]:
    raw = literal.encode()
    return [raw.hex(), raw.hex().upper(), base64.b64encode(raw).decode()]


ENCODED_PIECES = [
    *(form for literal in ENCODED_LITERALS for form in _encoded_forms(literal)),
    "0123456789abcdef", "QWxhZGRpbjpvcGVu", "==", "+", "/", "-", "_", "x", "é", " ",
    "ac-sha256=" + DIGEST, "bundle-sha256=" + DIGEST, "<SECRET>", "<TOKEN",
]


@pytest.mark.parametrize(("plain", "rewritten"), REWRITTEN, ids=["encoded-token", "protected"])
def test_rewritten_patterns_match_what_they_replaced_on_the_corpora(
    plain: re.Pattern[str], rewritten: re.Pattern[str]
) -> None:
    digests = f"bundle-sha256={DIGEST}0 xac-sha256={DIGEST} ac-sha256={DIGEST}\n_bundle-sha256={DIGEST}"
    for text in [JOINED, *BENCHMARK_TEXTS, " ".join(ENCODED_PIECES), "".join(ENCODED_PIECES), digests]:
        assert [m.span() for m in rewritten.finditer(text)] == [m.span() for m in plain.finditer(text)]


@given(st.lists(st.sampled_from(ENCODED_PIECES) | st.text(max_size=3), max_size=30).map("".join))
def test_rewritten_patterns_match_what_they_replaced_on_random_text(text: str) -> None:
    for plain, rewritten in REWRITTEN:
        assert [m.span() for m in rewritten.finditer(text)] == [m.span() for m in plain.finditer(text)]


LINE_BREAKS = [
    "", "\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1e", "\x00", " ", "\t",
]
"""What may stand on either side of a secret (the empty string: the start or end of the text, the
letter that lowers apart aside): every break ``str.splitlines`` knows, which the rules do not read
as one, a NUL, and plain spaces."""
FOLD_SHIFTERS = ["İ", "K", "ẞ", "ß", "ſ", "ı", "Σ", "ﬀ", "ǅ"]
"""Letters whose lower-case form has another length, or is another letter's, at the start of the
text: every position after one shifts if a lowered text is searched in its place."""
_TOKEN = "Qm4Zt8Rw2Yp6Hs0Lk3Vn5Bc"


def _hex_escaped(text: str) -> str:
    return "".join(f"\\x{ord(c):02x}" for c in text)


PLANTED_SECRETS = [
    (_TOKEN, _TOKEN),
    ("password=hunter2hunter2", "hunter2"),
    ("Api-Key: 'Pa55 word-9x' and Api-Key: 'Rw2Yp6Hs0Lk3Vn5Bc'", "Rw2Yp6Hs0Lk3"),
    ("http://svc:hunter2hunter2@host.example/v1", "hunter2"),
    ("Authorization: Bearer abcdEFGH12345678", "abcdEFGH1234"),
    ("ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5", "mN1pQ3sT5vW7"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    (f"{_TOKEN[:12]}...", _TOKEN[:12]),
    (f"...{_TOKEN[-12:]}", _TOKEN[-12:]),
    ("api\\u005fkey=hunter2hunter2", "hunter2"),
    ("password%3Dhunter2hunter2", "hunter2"),
    ("'" + _hex_escaped(_TOKEN) + "'", _hex_escaped(_TOKEN[:8])),
    (f"'{_TOKEN[:12]}\\n{_TOKEN[12:]}'", _TOKEN[:12]),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcDEF123ghiJKL456", "eyJzdWIiOiIxMjM0"),
    ("mail jane.doe@corp.example.org", "jane.doe@"),
    ("at /home/ops-user/models", "ops-user/models"),
]
"""Secrets of every family the line scan gates (keyword values, cuts, URL userinfo, escapes,
percent-encoding, addresses, paths) and some it does not, each with a core that must not survive
(none of :data:`PIECES` holds one)."""


def _beside(secret: str, line_break: str, shifter: str) -> list[str]:
    """``secret`` at the start and the end of a text, and on a line after ``shifter``."""
    return [
        secret + line_break, line_break + secret, f"{shifter}{line_break}{secret}{line_break}end",
        f"one{line_break}{shifter}two{line_break}{secret}",
    ]


def test_a_secret_beside_every_line_break_and_letter_that_lowers_apart_is_redacted() -> None:
    """Every secret beside every break, and a quoted value holding a break that is no ``\\n`` to
    the rules: the line scan reads it as one line, as the reference does."""
    redactor, reference = _redactor(), _reference(_redactor())
    texts = [
        (text, core)
        for secret, core in PLANTED_SECRETS
        for line_break in LINE_BREAKS
        for shifter in FOLD_SHIFTERS
        for text in _beside(secret, line_break, shifter)
    ]
    texts += [
        (f"x = 1\nconnect password: 'Pa55{line_break}word-9x' ok\n{shifter}", "word-9x")
        for line_break in LINE_BREAKS
        if line_break and "\n" not in line_break and "\r" not in line_break
        for shifter in FOLD_SHIFTERS
    ]
    differing = [text for text, _ in texts if redactor.text(text) != reference.text(text)]
    leaking = [text for text, core in texts if core in redactor.text(text)]
    assert (differing, leaking) == ([], [])


@given(
    st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=12).map("".join),
    st.sampled_from(LINE_BREAKS),
    st.sampled_from(PLANTED_SECRETS),
    st.sampled_from(["", *FOLD_SHIFTERS]),
    st.sampled_from(LINE_BREAKS),
    st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=12).map("".join),
)
def test_a_secret_beside_any_line_break_or_letter_that_lowers_apart_is_redacted(
    before: str, left: str, planted: tuple[str, str], shifter: str, right: str, after: str
) -> None:
    """The line scan splits lines at ``\\n`` only and reads the lowered text (searching the whole
    text when lowering changes its length): whatever break or letter stands beside a secret, the
    redactor says what the reference says, and the secret's core is gone."""
    secret, core = planted
    text = shifter + (before + left if left else "") + secret + (right + after if right else "")
    redacted = _redactor().text(text)
    assert redacted == _reference(_redactor()).text(text)
    assert core not in redacted
