"""Judging a run reads it with ``str`` methods now, and judges each distinct piece of it once;
the verdicts, and every number behind them, are those of the character loops before.

The references below are the loops as they were (the functions' whole bodies where they
changed; ``shape``'s loop is still shipped, for short text). They are compared with the
shipped functions on every run the benchmark texts and the corpora hold, and on random runs:
ASCII and not, runs of one piece repeated, paths, hex.
A comparison with a planted change (a class change missed across a separator, a repeated
piece judged as the first one) fails.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_redact_scanner import BENCHMARK_TEXTS, CORPUS

from pytest_specgate.evidence import _generic_secrets as judged
from pytest_specgate.evidence._generic_secrets import (
    GENERIC_TOKEN,
    MIN_CUT_LENGTH,
    MIN_TOKEN_LENGTH,
    looks_generated,
    reads_random,
    shape,
)

shape_by_loop = judged._shape_of_any
"""The loop ``shape`` was, unchanged: the shipped function still reads short and non-ASCII
text with it, and the fast path must give what it gives."""


def is_hex_by_loop(value: str) -> bool:
    return bool(value) and all(c in "0123456789abcdef" for c in value.lower()) and value.isalnum()


def one_case_hex_letters_by_loop(value: str) -> bool:
    letters = "".join(c for c in value if c.isalpha())
    return bool(letters) and (letters.islower() or letters.isupper()) and is_hex_by_loop(letters.lower())


def part_generated_piece_by_piece(run: str, minimum: int) -> bool:
    """``_part_generated`` as it was: every piece judged, the first one told by identity."""
    if judged.allowed_identifier(run) is not None:
        return False
    prefix = judged._ATTACHMENT_PREFIX.match(run)
    if prefix is not None:
        run = run[prefix.end():]
    if judged._PREFIXED_UUID.fullmatch(run):
        return True
    body = judged._VENDOR_PREFIX.sub("", run)
    if body != run and judged._is_hex(body.replace("-", "")) and len(body) < 20:
        return False
    if judged._whole(run) and reads_random(run, minimum) and not judged._short_hex(run, minimum):
        return True
    short_body = judged._short_hex(body, minimum)
    if body != run and judged._whole(body) and reads_random(body, minimum) and not short_body:
        return True
    pieces = [piece for piece in judged._SEGMENT_SPLIT.split(run) if piece]
    for piece in pieces:
        if len(piece) < minimum and len(piece) < 20:
            continue
        if reads_random(piece, minimum) and not judged._short_hex(piece, minimum):
            return True
        if judged._hex_body(piece) or (len(pieces) > 1 and piece is not pieces[0] and judged._hex_run(piece)):
            return True
    return False


def judged_piece_by_piece(run: str, minimum: int) -> bool:
    parts = judged._path_parts(run)
    if parts is not None:
        named = [part for part in parts if not judged._UUID4_NAME.fullmatch(part)]
        return any(part_generated_piece_by_piece(part, minimum) for part in named)
    return part_generated_piece_by_piece(run, minimum)


def _runs() -> list[str]:
    texts = [*BENCHMARK_TEXTS, *CORPUS]
    return list(dict.fromkeys(match.group(0) for text in texts for match in re.finditer(GENERIC_TOKEN, text)))


RUNS = _runs()


def _disagreements(run: str) -> list[str]:
    found = []
    if shape(run) != shape_by_loop(run):
        found.append("shape")
    if judged._is_hex(run) != is_hex_by_loop(run):
        found.append("hex")
    if judged._one_case_hex_letters(run) != one_case_hex_letters_by_loop(run):
        found.append("hex letters")
    for minimum in (MIN_TOKEN_LENGTH, MIN_CUT_LENGTH):
        if judged._judged(run, minimum) != judged_piece_by_piece(run, minimum):
            found.append(f"verdict at {minimum}")
    return found


def test_every_run_of_the_benchmark_texts_and_corpora_is_judged_as_before() -> None:
    assert len(RUNS) > 1_000
    assert {run[:40]: found for run in RUNS if (found := _disagreements(run))} == {}


PIECES = [
    "abc", "ABC", "a1", "Z9", "deadbeef", "DEADBEEF", "0123", "x", "hf", "_", "-", "/", "+", "=", "home",
    "Xb7Kp2Lm9Qr4St6Vw8Yz0", "c0ffee", "ſ", "İ", "K", "²", "٣", "Ⅻ", "ǅ", "é",
    "9f86d081884c7d659a2feaa0c55ad015",
]


@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=30).map("".join), st.integers(1, 60))
def test_random_runs_and_runs_of_one_piece_repeated_are_judged_as_before(run: str, repeats: int) -> None:
    assert _disagreements(run) == []
    assert _disagreements(run * repeats) == []
    assert _disagreements("/".join([run] * repeats)) == []


@pytest.mark.parametrize("hex_piece", ["0c0ffee1234567890ab1", "9a8b7c6d5e4f3a2b1c07"])
def test_a_piece_repeated_after_the_first_still_counts_as_after_it(hex_piece: str) -> None:
    """A hex piece of 20 counts only after the first piece; as the first it is an abbreviated
    digest. Written twice, its second copy makes the run a credential (the whole run is 40 hex,
    a commit's length, so only that copy decides): a judgement that took every copy of the
    first piece for the first one would keep it."""
    run = f"{hex_piece}-{hex_piece}"
    assert not judged._judged(hex_piece, MIN_TOKEN_LENGTH)
    assert judged._judged(run, MIN_TOKEN_LENGTH) is judged_piece_by_piece(run, MIN_TOKEN_LENGTH) is True


def test_a_shape_that_misses_a_class_change_is_caught() -> None:
    """Planted bug: counting changes between runs of a kind across a separator too."""

    def planted(value: str) -> tuple[int, int, bool, bool, bool, float]:
        length, _, digit, lower, upper, entropy = shape(value)
        kinds = value.translate(judged._KINDS).replace(" ", "")
        return length, sum(kinds.count(change) for change in judged._CHANGES), digit, lower, upper, entropy

    assert [run[:40] for run in RUNS if planted(run) != shape_by_loop(run)]


def test_looks_generated_is_what_the_loops_said_on_known_tokens_and_words() -> None:
    assert looks_generated("Xb7Kp2Lm9Qr4St6Vw8Yz0AbCd")
    assert not looks_generated("tests/evidence/test_judgement_equivalence")
    assert not looks_generated("home/" * 500)
