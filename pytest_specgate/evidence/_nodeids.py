"""A run's node ids, each redacted once, the common honest shape recognised without a rule pass.

Every node id of a run is a new string, and the journal, the records, the receipt, the selection
and the census all write it: :class:`NodeIdRedactor` redacts each once per run and keeps the
answer. Redacting one whole took the redactor's full pass, 60 to 100 µs: a test name of 16
identifier characters or more (``test_trivial_1001``) is a run the generic-token rule must judge,
so every rule searches it.

The file part (up to the ``::`` after ``.py`` when a Python name follows) is redacted on its own
and memoised, since a hundred tests share it: no rule matches across that split (a keyword before
it would be ``py``, a token stops at ``.`` and ``:``, and ``://`` needs a ``/`` after the colons:
``tests/a.py:://u:p@h`` goes whole). A file part the redactor changes (a path under a home
folder, an absolute path) sends the whole id through the full pass, so a rule that reads a path
on into the test part still does.

The test part ``T`` is returned as it is, with no rule pass, when
:meth:`NodeIdRedactor.unchanged_by_every_rule` shows that no rule claims anything in it. Then
``redactor.text(T) == T``, because:

1. ``T`` has only ASCII letters, digits and ``_-.:[]``: no placeholder or marked digest is
   protected in it (they need ``<`` or ``=``), so no claim splits it into gaps a rule would search
   apart, and no escape is decoded in it (that needs ``\\`` or ``%``). It has no line break:
   a rule's ``lines_with`` finds all of ``T`` or nothing.
2. The known secrets' mask finds nothing in ``T``, and for every rule but ``generic-token`` the
   redactor's own test says no claim: a literal the rule ``needs`` is missing, every literal of
   its ``gate`` is missing from ``T`` in small letters (:func:`~._redact.folded` is ``lower`` for
   ASCII; every match holds one, proven from the pattern, so this holds whether or not the
   pattern is compiled, and the first ids do not compile every rule), its ``lines_with`` finds
   nothing in ``T`` in small letters, or its pattern has no match in ``T``. A literal with a
   character ``T`` cannot hold is never in it: the run's :class:`_Rules` keeps only the others,
   asks which of its gate literals ``T`` holds once for all rules, and leaves out a rule whose
   every needed or gate literal is of that kind.
3. ``generic-token`` (every rule with its pattern and its accept) claims nothing: its possessive
   pattern matches only whole runs of 16 or more credential characters, here runs of
   ``[A-Za-z0-9_-]``. A run made of ``_``-separated pieces of one kind each (small letters,
   capitals or digits: ``test_trivial_1001``) is never accepted by
   :func:`~._generic_secrets.generic_token`: the character before it is no escape's, with no
   ``-`` or ``/`` it has no attachment prefix, UUID or path parts, a piece of one kind has no
   class change so neither the run, nor any piece, nor the run without a vendor prefix reads
   random (every branch of ``reads_random`` needs changes between kinds; removing padding only
   shortens a piece), and a hex body is all digits or all letters, which ``_hex_run`` refuses.
   Any other run (a class name in camel case) is put to the rule itself.
4. With nothing claimed the pass changes nothing and the loops stop: ``T`` is its own redaction.

tests/evidence/test_nodeid_redaction.py checks this against the full redactor on random ids, runs
of one kind, vendor prefixes and planted secrets included. Anything else (a ``/``, ``=`` or
space in a parametrize id, a user name the identity rules find, a token) takes the full pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, final

from pytest_specgate.evidence._generic_secrets import GENERIC_TOKEN, generic_token
from pytest_specgate.evidence._known_secrets import mask_pattern

if TYPE_CHECKING:
    from pytest_specgate.evidence._redact import RedactionRule, Redactor

__all__ = ["NodeIdRedactor", "settled_by_shape"]

_FILE_END = ".py::"
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
"""What a class or function name begins with (ASCII only: anything else goes whole)."""
_PLAIN_CHARACTERS = re.compile(r"[A-Za-z0-9_.:\[\]-]++")
_LONG_RUN = re.compile(r"[A-Za-z0-9_-]{16,}+")
"""A run ``generic-token`` reads (in a plain test part: only these of its alphabet occur)."""
_ONE_KIND_PIECES = re.compile(r"_*+(?:(?:[a-z]++|[A-Z]++|[0-9]++)(?:_++|\Z))*+")
"""``_``-separated pieces, each small letters only, capitals only or digits only."""


def settled_by_shape(test_part: str) -> bool:
    """Whether every run of 16 or more of ``[A-Za-z0-9_-]`` in ``test_part`` is ``_``-separated
    pieces of one kind each, which ``generic-token`` never accepts (the module docstring, 3.):
    ``test_trivial_1001``, not ``test_aB3xY9kLmN0pQrSt``."""
    return all(_ONE_KIND_PIECES.fullmatch(run.group(0)) for run in _LONG_RUN.finditer(test_part))


@final
class NodeIdRedactor:
    """One run's node ids redacted, each once: the same text wherever the run writes it (journal,
    records, payload, receipt, selection, census), so completeness still matches node ids across
    them. A secret registered after an id was met empties the memo, as it empties the redactor's."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._redacted: dict[str, str] = {}
        self._known = redactor.known_secrets
        self._rules = _Rules.of(redactor)
        self._known_mask = mask_pattern(self._known)

    def __call__(self, nodeid: str) -> str:
        known = self.redactor.known_secrets
        if known != self._known:
            self._known, self._known_mask = known, mask_pattern(known)
            self._redacted.clear()
        redacted = self._redacted.get(nodeid)
        if redacted is None:
            redacted = self._redacted[nodeid] = self._redacted_once(nodeid)
        return redacted

    def _redacted_once(self, nodeid: str) -> str:
        text = self.redactor.text
        cut = nodeid.find(_FILE_END)
        test_part = nodeid[cut + 5 :]
        if cut < 0 or not test_part[:1] or test_part[0] not in _NAME_START:
            return text(nodeid)
        file_part = nodeid[: cut + 3]
        if text(file_part) != file_part:
            return text(nodeid)
        if self.unchanged_by_every_rule(test_part):
            return nodeid
        return file_part + "::" + text(test_part)

    def unchanged_by_every_rule(self, test_part: str) -> bool:
        """Whether ``test_part`` is shown to be its own redaction without a rule pass (see the
        module docstring): False says only that the full pass must decide."""
        rules = self._rules
        if _PLAIN_CHARACTERS.fullmatch(test_part) is None:
            return False
        if self._known_mask is not None and self._known_mask.search(test_part) is not None:
            return False
        lowered = test_part.lower()
        held = frozenset(literal for literal in rules.gate_literals if literal in lowered)
        for question in rules.searched:
            needs, gate, rule = question.needs, question.gate, question.rule
            if needs and not any(literal in test_part for literal in needs):
                continue
            if gate is not None and gate.isdisjoint(held):
                continue
            if rule.lines_with is not None and rule.lines_with.search(lowered) is None:
                continue
            if rule.pattern.search(test_part) is not None:
                return False
        if settled_by_shape(test_part):
            return True
        whole = len(test_part)
        return all(next(rule.claims(test_part, 0, whole), None) is None for rule in rules.generic_token)


@dataclass(frozen=True)
class _Question:
    """What decides for one rule that it claims nothing in a plain test part: its needed and gate
    literals, cut to those a plain test part can hold (``gate``: None where the rule has none)."""

    rule: RedactionRule
    needs: tuple[str, ...]
    gate: frozenset[str] | None


def _plain(literals: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(literal for literal in literals if _PLAIN_CHARACTERS.fullmatch(literal))


@dataclass(frozen=True)
class _Rules:
    """The redactor's rules as a plain test part meets them. ``generic_token``: the rules that are
    ``generic-token`` as the proof read it (its pattern and its accept), whose claims a test
    part's shape settles (or that are asked). ``searched``: what decides for every other rule, as
    the redactor's pass decides it, that it claims nothing there: a literal it ``needs`` is
    missing, every literal of its ``gate`` is missing in small letters, its ``lines_with`` finds
    nothing in the small-letter form, or its pattern finds no match; a rule whose every needed
    literal, or every gate literal, has a character no plain test part has is left out.
    ``gate_literals``: every gate literal of ``searched``, each asked once per test part."""

    generic_token: tuple[RedactionRule, ...]
    searched: tuple[_Question, ...]
    gate_literals: tuple[str, ...]

    @classmethod
    def of(cls, redactor: Redactor) -> _Rules:
        generic: list[RedactionRule] = []
        searched: list[_Question] = []
        for rule in redactor.rules:
            needs, gate = _plain(rule.needs), _plain(rule.gate)
            if rule.source == GENERIC_TOKEN and rule.accept is generic_token:
                generic.append(rule)
            elif (needs or not rule.needs) and (gate or not rule.gate):
                searched.append(_Question(rule, needs, frozenset(gate) if rule.gate else None))
        literals = dict.fromkeys(literal for question in searched for literal in question.gate or ())
        return cls(tuple(generic), tuple(searched), tuple(literals))
