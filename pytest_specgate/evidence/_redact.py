"""Redaction: the one gate every byte of evidence passes before it reaches disk.

Evidence is pasted into pull requests, so it must not carry who ran it, where, or any
credential. :meth:`Redactor.encode` is the only way evidence files get their bytes; it
redacts strings *inside* a JSON structure (keys too) before serializing, so the result stays
valid JSON, and opens bytes in every encoding and container that can hide text
(:mod:`._payloads`).

One pass over a text lets each rule, in order, claim the spans it matches that no earlier
rule (and no placeholder) claimed; then every claim is replaced at once. Passes repeat until
nothing changes, and placeholders are never rewritten, which makes redaction idempotent and
guarantees it terminates (every change turns ordinary text into a placeholder). Every
pattern runs in linear time: each may only start where a run of its characters starts.
Words whose JSON (``\\u005f``, ``\\/``) or percent (``%40``) escapes decode to something a
rule redacts (read with the word before them, for context like ``Bearer``) are replaced by
their redacted decoded form.
"""

from __future__ import annotations

import base64
import bisect
import getpass
import ipaddress
import math
import os
import pwd
import re
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import chain
from pathlib import Path
from typing import TypeAlias

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.validation import compiled_patterns
from pytest_specgate.evidence._generic_secrets import (
    CUT_TOKEN,
    CUT_TOKEN_LINES,
    ESCAPED_BREAK_TAIL,
    ESCAPED_BREAK_TAIL_LINES,
    ESCAPED_BREAK_TOKEN,
    ESCAPED_BREAK_TOKEN_LINES,
    FLAG_VALUE,
    FLAG_VALUE_WORDS,
    GENERIC_TOKEN,
    JOINED_TOKEN,
    JOINED_TOKEN_LINES,
    KEYWORD_VALUE,
    KEYWORD_VALUE_LINES,
    LINE_BREAK_TAIL,
    LINE_END_HEAD,
    LINE_END_HEAD_BEFORE,
    LINE_END_HEAD_LONGEST,
    NETRC_FIELD,
    NETRC_FIELD_WORDS,
    NETRC_LINE,
    NETRC_LINE_WORDS,
    USER_FLAG_PASSWORD,
    cut_token,
    escaped_break_token,
    escaped_character,
    generic_token,
    joined_token,
    keyword_value,
    line_end_head,
    netrc_rewrite,
)
from pytest_specgate.evidence._jsonio import pretty_json, replace_atomically, to_jsonable
from pytest_specgate.evidence._known_secrets import known_secret_values, mask_pattern, usable_secrets
from pytest_specgate.evidence._payloads import (
    RefusedPayload,
    container_redaction,
    is_image,
    is_mostly_text,
    png_readable_parts,
    text_form,
)
from pytest_specgate.evidence._secret_rules import (
    CONTEXT_FORMATS,
    ENCODED_PREFIXES,
    RANDOM_TAIL,
    TOKEN_FORMATS,
    TOKEN_SPLIT,
    ContextFormat,
    TokenFormat,
)

PLACEHOLDERS = (
    "<REDACTED>",
    "<SECRET>",
    "<HF_TOKEN>",
    "<TOKEN>",
    "<EMAIL>",
    "<PATH>",
    "<HOME>",
    "<IP>",
    "<HOST>",
    "<USER>",
)
_PROTECTED = re.compile(
    "|".join(re.escape(token) for token in PLACEHOLDERS)
    + r"|a(?<!\wa)c-sha256=[0-9a-f]{64}\b|b(?<!\wb)undle-sha256=[0-9a-f]{64}\b"
)
"""Placeholders, and the digests of a markdown digest line, which no rule may rewrite. Every
branch starts with a literal character (the digests' ``\\b`` is the look-behind after it), so the
engine skips to those characters instead of trying the alternation at every one."""
_HEX_DIGEST = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_DIGEST_KEYS = frozenset({"sha256", "bundle_sha256", "commit", "gitCommit"})
"""Keys whose hex digests are kept as they are, which the generic detector would otherwise read
as a key."""
_BYTE_VIEWS = (
    ("utf-8", "surrogateescape"),
    ("latin-1", "strict"),
    ("utf-16-le", "surrogatepass"),
    ("utf-16-be", "surrogatepass"),
)
"""How bytes that are not text in one encoding are read anyway: as UTF-8 with the bytes that
do not decode kept aside, as latin-1, and as UTF-16 of either byte order; every reading is
a bijection, so what no rule matches keeps its bytes. Text with stray bytes is redacted through
them; binary content is only scanned through them (a credential found withholds it)."""
_CACHED_CHARS = 256
_CACHED_TEXTS = 16_384
_LONG_CACHED_CHARS = 65_536
_LONG_CACHED_TOTAL = 4_194_304
"""Longer texts are memoised too, up to this many characters held in all: a run-wide fact (the
not-qualifying reason naming every foreign module) recurs in every AC record of a run."""
_GATED_CHARS = 65_536
"""The longest text a rule's gate reads (``RedactionRule.gate``): a longer one costs as much to
read once per literal as the compile the gate would save, once per process."""
_SHORT_TEXT = 4_096
"""A text this short is asked ``search`` by each rule (its line scan, or its pattern) before the
rule's claims are built (one call instead of three generators, where most rules find nothing).
That made the one-search prefilter of all rules, which compiled in 20-25 ms at a process's
first text, slower than no prefilter on every kind of short text measured (it tried every
branch at every character), so there is none."""
_MAX_ROUNDS = 16
"""Rounds of passes and escape decoding; text still changing after them is withheld whole."""

SECRET_ENV_NAMES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY", "JWT", "PAT")
_SECRET_ENV_SUFFIX = re.compile(
    r"(?:TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?"
    r"|_(?:KEY|KEY_ID|PAT|JWT|DSN|WEBHOOK|WEBHOOK_URL|SIGNATURE|SAS|CONNECTION_STRING))$"
)
"""Credential-looking variable names; the short words (``KEY``, ``PAT``, ``JWT``) only as a
part of their own after ``_``, so ``MONKEY`` or ``COMPAT`` are not credentials."""
MIN_SECRET_LENGTH = 6
"""Shorter environment values are not credentials; replacing them would shred the text."""

SENSITIVE_PATH_ROOTS = (
    "Users", "home", "root", "opt", "mnt", "data", "private", "var/folders", "srv", "Volumes", "builds",
)
_PATH_CHAR = r"[^\s\"'`<>|;,()\[\]{}]"
_PATH_WORD = r"[^\s\"'`<>|;,()\[\]{}/\\]"
_PATH_TAIL = rf"(?:[/\\]{_PATH_CHAR}*(?:(?: {_PATH_WORD}+){{1,4}}(?=[/\\]){_PATH_CHAR}*)*)?"
"""The rest of a path, across up to four space-separated words when a separator follows them
(``/Users/Jane Q Doe/models``)."""
_SENSITIVE_PATH = (
    r"(?a)/(?<![\w.-]/)(?:"
    + "|".join(re.escape(root) for root in SENSITIVE_PATH_ROOTS)
    + r")(?![\w.-])"
    + _PATH_TAIL
)
_WINDOWS_PROFILE = (
    r"(?a)[A-Za-z](?<!\w[A-Za-z]):[\\/]+(?i:Users|Documents and Settings)(?![\w.-])" + _PATH_TAIL
)
_ABSOLUTE_PATH = rf"(?<![\w.~/\\-])(?:~|[A-Za-z]:)?[/\\]{_PATH_CHAR}*"
_BEARER = r"(?ai)\bbearer\s+((?:(?!bearer\s)[A-Za-z0-9._~+/=-]){8,})"
"""A token ends where the next ``Bearer`` begins: ``tok==Bearer tok2`` is two tokens, not one
that swallows the keyword of the second."""
_AUTH_HEADER = (
    r"(?a)[aA](?i:(?<=a)uthorization[\"']?\s*[=:]\s*[\"']?(?:basic|digest|negotiate|token)\s+)"
    r"([A-Za-z0-9._~+/=-]{4,})"
)
_URL_CREDENTIALS = r"://([^\s/?#@\"'`<>]+)@"
_EMAIL = r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
_IPV4_CANDIDATE = r"\d(?<![\d.]\d)(?<!\d\.\d)\d{0,2}(?:\.\d{1,3}){3}(?!\d|\.\d)"
_IPV6_CANDIDATE = (
    r"(?<![0-9A-Fa-f:])"
    r"(?=[0-9A-Fa-f:]*[0-9A-Fa-f])"
    r"(?=[0-9A-Fa-f:]*::|(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f])"
    r"[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![0-9A-Za-z_:])"
)
"""An address has a hex digit and either ``::`` or eight groups, and ends where a word does: so
the ``::`` of a node id (``test_x.py::Class::test``) and ``HH:MM:SS`` never reach the rule pass."""
_AT_SIGN = re.compile("@")
_DRIVE_SEPARATOR = re.compile(r":[\\/]")
_DOTTED_QUAD = re.compile(r"\d\.\d{1,3}\.\d{1,3}\.\d")
_COLON_GROUP = re.compile(r":[0-9a-f]{0,4}:")
"""What a line holding an e-mail address, a Windows profile path, an IPv4 or an IPv6 address
holds (in its :func:`folded` form)."""
_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\x([0-9A-Fa-f]{2})|\\(/)|%([0-9A-Fa-f]{2})")
_WORD = re.compile(r"\S*")
_FOLLOWING_WORD = re.compile(rf"(?:[ \t]++|{TOKEN_SPLIT})\S+")
"""The word after an escaped one: the value of an escaped key (``"api\u005fkey": "v"``), or,
on the next line, the end of a token a line break cut."""
_UNIT_SEPARATOR = "\n<REDACTED>\n"
"""Escaped words are redacted as one text, kept apart by a placeholder no rule can cross."""
_UP_TO_LAST_SPACE = re.compile(r"[\s\S]*\s")
NOT_HOST_NAMES = frozenset({"localhost", "localhost.localdomain"})

Claim = tuple[int, int, str]
"""``text[start:end]`` is replaced by the string."""


@dataclass(frozen=True)
class RedactionRule:
    """Replace what ``pattern`` matches (or only its group ``group``) with ``replacement``.

    ``accept`` can veto a match (by its text or what surrounds it); ``rewrite`` computes the
    replacement from the text instead (a path with a user name inside keeps the rest of it).
    """

    name: str
    source: str
    """The pattern, compiled (:attr:`pattern`) the first time a text may hold a match."""
    replacement: str
    group: int | str = 0
    accept: Callable[[re.Match[str]], bool] | None = None
    rewrite: Callable[[str], str] | None = None
    needs: tuple[str, ...] = ()
    """Literals one of which a text must hold for this rule to match in it (a cut's ``...``, a
    placeholder, an escape): checked once per pass, at the speed of ``in``, before any search."""
    lines_with: re.Pattern[str] | None = None
    """What every line holding a claim of this rule matches in the line's :func:`folded` form
    (small letters), for a ``pattern`` that never reads across a line break
    (tests/evidence/test_redact_scanner.py proves both for every rule): the rule then searches
    only the lines this finds, in one fast case-sensitive scan, instead of the whole text."""
    resume_in: str | None = None
    """The group where a search starts again after ``accept`` rejects a match, instead of after
    the match: a weak keyword's value that is not a credential (``key=foo:password=PASS``, a
    stray quote in ``sig=' password: 'PASS'``) may hold the next keyword and its value."""
    found_before: re.Pattern[str] | None = None
    """For a pattern that starts with a character class: what every match holds, or is followed
    by, at most :attr:`longest` characters after its start (the line break after a token's first
    part, after a PEM body's first line). The rule is found from these (the engine skips to
    each), trying its pattern at the positions before each, instead of at every character
    (tests/evidence/test_redact_scanner.py checks it finds what the plain search finds)."""
    longest: int = 0
    scope: str = "text"
    """What a pass after the first must search of this rule (see :class:`_Neighbourhood`):
    ``line``, a pattern that never matches a line break (tests/evidence/test_redact_scanner.py
    proves it) judged by what its own line holds, searches only the lines a replacement changed
    or a claim of this pass touched; ``joined``, a pattern that crosses a line break only after
    a token character, a quote, ``=``, ``:``, ``>`` or blank space (a catalogue token cut by a
    break, a JWT, a PEM body, ``Bearer`` and its token on the next line), or a name judged by the
    ``user=`` before it, searches those lines and the lines such a break joins to them; ``text``
    (a pattern of the user's, a private key's block) searches the whole text."""
    gate: tuple[str, ...] = ()
    """Small-letter literals one of which every match holds, read in its :func:`folded` form
    (tests/evidence/test_redact_gates.py proves it from the parsed pattern): until its pattern
    is compiled, a text whose folded form holds none of them is not searched. A process then
    compiles the few rules the texts it meets may need, at the speed of ``in``, instead of all
    of them at its first text."""

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source)

    def may_match(self, text: str, searched: Callable[[], str | None]) -> bool:
        """False only when what this rule is to search of ``text`` holds no match: a literal it
        :attr:`needs` is missing from ``text``, or, while the pattern is not compiled, every
        :attr:`gate` literal is missing from ``searched()``: what it searches, in its
        :func:`folded` form (None when there is none, or when it is too long to be worth
        reading once per literal: :data:`_GATED_CHARS`). A compiled pattern is searched
        instead: for most rules its own literal-first search costs what the gate's would."""
        if self.needs and not any(literal in text for literal in self.needs):
            return False
        if not self.gate or "pattern" in self.__dict__:
            return True
        small = searched()
        return small is None or any(literal in small for literal in self.gate)

    def claims_in_text(
        self,
        text: str,
        lowered: str | None,
        lines_found: dict[re.Pattern[str], list[tuple[int, int]]] | None = None,
    ) -> Iterator[tuple[Claim, int, int]]:
        """:meth:`claims` over the whole of ``text``: over the lines :attr:`lines_with` finds
        in ``lowered`` (``text``'s :func:`folded` form; each line searched as the whole text would
        be: a match never leaves its line), or over all of it (no such pattern, or no lowered
        form). ``lines_found`` keeps the lines each pattern found in this text, for the next rule
        that names the same one."""
        if self.lines_with is None or lowered is None:
            yield from self.claims(text, 0, len(text))
            return
        lines = None if lines_found is None else lines_found.get(self.lines_with)
        if lines is None:
            lines = _lines_matching(self.lines_with, lowered)
            if lines_found is not None:
                lines_found[self.lines_with] = lines
        for start, end in lines:
            yield from self.claims(text, start, end)

    def claims_in_windows(
        self,
        text: str,
        windows: Sequence[tuple[int, int]],
        lowered: Sequence[str | None],
        lines_found: dict[re.Pattern[str], tuple[object, list[tuple[int, int]]]],
    ) -> Iterator[tuple[Claim, int, int]]:
        """:meth:`claims_in_text` within ``windows`` (whole lines, each ending before its line
        break; ``lowered`` holds each one's :func:`folded` form): the lines :attr:`lines_with`
        finds in them, or all of each. ``lines_found`` keeps the lines a pattern found in these
        same windows, for the next rule naming it."""
        gate = self.lines_with
        if gate is None:
            for start, end in windows:
                yield from self.claims(text, start, end)
            return
        cached = lines_found.get(gate)
        if cached is not None and cached[0] is windows:
            lines = cached[1]
        else:
            lines = []
            for (start, end), window in zip(windows, lowered, strict=True):
                if window is None:
                    lines.append((start, end))
                else:
                    lines += [(start + s, start + e) for s, e in _lines_matching(gate, window)]
            lines_found[gate] = (windows, lines)
        for start, end in lines:
            yield from self.claims(text, start, end)

    def claims(self, text: str, start: int, end: int) -> Iterator[tuple[Claim, int, int]]:
        """Each claim in ``text[start:end]`` with the span of the whole match that made it."""
        matches = self._matches(text, start, end)
        while (match := next(matches, None)) is not None:
            found = match.group(self.group)
            if not found or (self.accept is not None and not self.accept(match)):
                if self.resume_in is not None and match.start(self.resume_in) > match.start():
                    matches = self._matches(text, match.start(self.resume_in), end)
                continue
            replacement = self.replacement if self.rewrite is None else self.rewrite(found)
            if replacement != found:
                span = match.start(self.group), match.end(self.group)
                yield (*span, replacement), match.start(), match.end()

    def _matches(self, text: str, start: int, end: int) -> Iterator[re.Match[str]]:
        """The pattern's matches in ``text[start:end]``, left to right, none overlapping."""
        if self.found_before is None:
            yield from self.pattern.finditer(text, start, end)
            return
        floor = start
        for anchor in self.found_before.finditer(text, start, end):
            for position in range(max(floor, anchor.start() - self.longest), anchor.start()):
                match = self.pattern.match(text, position, end)
                if match is not None:
                    floor = match.end()
                    yield match
                    break

    def apply(self, text: str) -> str:
        """This rule alone over ``text`` (for tests and diagnostics)."""
        return _replaced(text, [claim for claim, _, _ in self.claims(text, 0, len(text))])


@dataclass(frozen=True)
class LocalIdentity:
    """Who and where this process runs: the facts that must not leave the machine."""

    user_names: tuple[str, ...]
    host_names: tuple[str, ...]
    home_dirs: tuple[str, ...]

    @classmethod
    def probe(cls, environ: Mapping[str, str]) -> LocalIdentity:
        users = {environ.get("USER", ""), environ.get("LOGNAME", ""), _login_name()}
        homes = {environ.get("HOME", ""), os.path.expanduser("~"), _passwd_home()}
        full = socket.gethostname()
        hosts = {full, full.split(".")[0], _fqdn()}
        return cls(
            user_names=_clean(users, minimum=2),
            host_names=_clean(hosts - NOT_HOST_NAMES, minimum=2),
            home_dirs=_clean({str(Path(home)) for home in homes if home}, minimum=2),
        )


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def _passwd_home() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return ""


def _fqdn() -> str:
    try:
        return socket.getfqdn()
    except OSError:
        return ""


def _clean(values: Iterable[str], minimum: int) -> tuple[str, ...]:
    """Longest first, so a full name is replaced before a prefix of it."""
    kept = {value for value in values if len(value) >= minimum and value not in NOT_HOST_NAMES}
    return tuple(sorted(kept, key=lambda value: (-len(value), value)))


def _is_public_ip(match: re.Match[str]) -> bool:
    try:
        address = ipaddress.ip_address(match.group(0))
    except ValueError:
        return False
    return not address.is_loopback


def _is_public_ipv6(match: re.Match[str]) -> bool:
    """Two hex groups at least, so ``test.py::test_a`` or ``a::b`` never count as addresses."""
    return sum(1 for group in match.group(0).split(":") if group) >= 2 and _is_public_ip(match)


def _names_in_any_case(names: Sequence[str]) -> str:
    """An alternation of ``names`` in any case, longest first, that starts with a character
    class: the regex engine then skips ahead to candidates instead of trying every branch at
    every position (ten times faster on a megabyte)."""
    firsts = sorted({case for name in names for case in (name[0].lower(), name[0].upper())})
    branches = "|".join(f"(?<={re.escape(name[0])}){re.escape(name[1:])}" for name in names)
    return f"[{''.join(re.escape(first) for first in firsts)}](?i:{branches})"


_USER_KEY_BEFORE = re.compile(
    r"\b(?:user|username|user_name|logname|login|owner)[\"']?\s*[=:]\s*[\"']?$", re.IGNORECASE
)
_HOST_KEY_BEFORE = re.compile(
    r"\b(?:host|hostname|host_name|node|nodename|machine|server)[\"']?\s*[=:]\s*[\"']?$", re.IGNORECASE
)
_KEY_WINDOW = 40


@dataclass(frozen=True)
class _Identifies:
    """Whether a name found in text stands for this user or host there, not for a word.

    A name that cannot be a word (it has a digit, dot, dash or underscore) always does;
    a word-like name (``root``, ``test``, ``default``) only as ``user@``, ``~user``,
    ``@host``, ``//host``, ``host:port`` or after ``user=``/``host:``; paths are
    :func:`_path_identity_rule`'s.
    """

    kind: str
    distinct: frozenset[str]

    def __call__(self, match: re.Match[str]) -> bool:
        text, start, end = match.string, match.start(), match.end()
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        if _alphanumeric(before) or _alphanumeric(after):
            return False
        if match.group(0).lower() in self.distinct:
            return True
        if self.kind == "user":
            keyed = _USER_KEY_BEFORE.search(text, max(0, start - _KEY_WINDOW), start)
            at_sign = after == "@" and before not in (".", "_", "%", "+", "-")
            return at_sign or before == "~" or keyed is not None
        keyed = _HOST_KEY_BEFORE.search(text, max(0, start - _KEY_WINDOW), start)
        port = after == ":" and text[end + 1 : end + 2].isdigit()
        return before == "@" or text[max(0, start - 2) : start] == "//" or port or keyed is not None


def _alphanumeric(character: str) -> bool:
    return character.isascii() and character.isalnum()


def _identity_rule(names: Sequence[str], placeholder: str, kind: str) -> list[RedactionRule]:
    """This user's or host's names, where they identify (see :class:`_Identifies`)."""
    if not names:
        return []
    distinct = frozenset(name.lower() for name in names if not name.isalpha())
    return [RedactionRule(kind, _names_in_any_case(names), placeholder, accept=_Identifies(kind, distinct),
                          lines_with=_lines_with_any(names), scope=_scope_of(names, "joined"))]


def _path_identity_rule(users: Sequence[str], hosts: Sequence[str]) -> list[RedactionRule]:
    """User and host names as components of an absolute path (``/tmp/pytest-of-<user>/``)."""
    names = sorted({*users, *hosts}, key=lambda name: (-len(name), name))
    if not names:
        return []
    lowered = [name.lower() for name in names]
    component = re.compile(
        rf"(?:(?<=[/\\~])|(?<=pytest-of-))({_names_in_any_case(names)})(?=[/\\]|$)"
    )
    user_set = {name.lower() for name in users}

    def rewrite(path: str) -> str:
        folded = path.lower()
        if not any(name in folded for name in lowered):
            return path
        return component.sub(
            lambda match: "<USER>" if match.group(1).lower() in user_set else "<HOST>", path
        )

    return [RedactionRule("path-identity", _ABSOLUTE_PATH, "", rewrite=rewrite,
                          lines_with=_lines_with_any(names), scope="line")]


def _scope_of(literals: Sequence[str], scope: str) -> str:
    """``scope`` for a rule matching ``literals``, or ``text`` when one holds a line break."""
    return "text" if any("\n" in literal for literal in literals) else scope


def _lines_with_any(literals: Sequence[str]) -> re.Pattern[str] | None:
    """Lines holding one of ``literals`` in any case, for a rule built from them; None (search
    the whole text) when one is not plain ASCII without a line break: such a rule may cross a
    line, and a letter outside ASCII may lower differently in a longer text (a final sigma)."""
    if any(not literal.isascii() or "\n" in literal for literal in literals):
        return None
    return _any_literal(literal.lower() for literal in literals)


def _directory_rules(directory: str, inside: str, itself: str, name: str) -> list[RedactionRule]:
    """``directory`` as a path of its own, not as the tail of a relative one (``data/root``)."""
    escaped = re.escape(directory.rstrip("/"))
    lines = _lines_with_any([directory.rstrip("/")])
    scope = _scope_of([directory], "line")
    return [
        RedactionRule(f"{name}-inside", r"(?<![\w.-])" + escaped + "/", inside, lines_with=lines,
                      scope=scope),
        RedactionRule(name, r"(?a)(?<![\w.-])" + escaped + r"(?![\w.-])", itself, lines_with=lines,
                      scope=scope),
    ]


_NOT_A_KEY = (
    r"(?![a-z_]++(?:(?:\\u005[fF]|\\x5[fF]|%5[fF])[a-z_]*+)*+"
    r"(?:[ \t]*[:=]|\\u003[aAdD]|\\x3[aAdD]|%3[aAdD]))"
)
"""A line that starts with a lower-case name and ``=`` or ``:`` starts a key of its own
(``token: s.x`` after a variable-length token that ended the line before), not a token's
continuation; so does one whose ``_``, ``=`` or ``:`` is escaped (``api\\u005fkey=``, ``api%5Fkey=``),
which the decoding step reads as that key."""


_ESCAPED_SPLIT = r"(?:\\r)?\\n[ \t]{0,8}"
"""A line break written as ``\\n`` (``\\r\\n``): a token JSON-escaped or in a repr, cut where a
real break would have cut it, with a rest too short for the escaped-break rules (under 8)."""


def _token_pattern(token: TokenFormat) -> str:
    """``prefix`` then the body, whole or cut by one line break (or one written escaped, as JSON
    and a repr write it: :data:`_ESCAPED_SPLIT`). A first line too short for a
    whole token must go on; one long enough to be whole goes on only into a word that reads
    as a random tail (:data:`RANDOM_TAIL`); a whole token at a line end stays one (the
    possessive counts cannot reach the break). A first part too short, cut by one space,
    goes on when both it and the word after the space read as a random tail (a word that
    starts like a prefix, ``sk-learn 2024``, ``hf_hub 0.20``, stays); the first part's test
    reads no further than such a part can run, so a long run of prefixes costs no more than
    before (each prefix in it would otherwise read the rest of the run)."""
    first, rest = token.prefix[0], token.prefix[1:]
    if not first.isalnum():
        raise ValueError(f"{token.rule_id}: a token prefix starts with a letter or digit, not {first!r}")
    guard = f"(?<!{token.boundary}{re.escape(first)})" if token.boundary else ""
    body, shortest, longest = token.body, token.shortest, token.longest
    split = f"(?:{TOKEN_SPLIT}|{_ESCAPED_SPLIT})"
    tail = f"{split}{_NOT_A_KEY}{body}++"
    cuts = [f"{body}{{1,{shortest - 1}}}+{tail}"] if shortest > 1 else []
    if shortest > 1:
        reach = shortest - 1
        head_random = (
            rf"(?=[^\s0-9]{{0,{reach}}}+[0-9]|[^\sa-z]{{0,{reach}}}+[a-z][^\sA-Z]{{0,{reach}}}+[A-Z])"
        )
        cuts.append(f"{head_random}{body}{{1,{reach}}}+ {RANDOM_TAIL}{_NOT_A_KEY}{body}++")
    if longest > shortest:
        cuts.append(f"{body}{{{shortest},{longest - 1}}}+{split}{RANDOM_TAIL}{_NOT_A_KEY}{body}++")
    return f"{re.escape(first)}{guard}{rest}(?:{'|'.join([*cuts, f'{body}{{{shortest},}}+'])})"


def _encoded_patterns(literals: Iterable[str]) -> list[str]:
    """Tokens base64- or hex-encoded whole (gitleaks' ``jwt-base64`` idea, for every prefix):
    the encoded prefix starts a run of the encoding's characters."""
    patterns = []
    for literal in literals:
        forms = _encoded_literals(literal)
        if len(forms) == 2:
            b64 = forms[0]
            patterns.append(f"{b64[0]}(?<![A-Za-z0-9+/]{b64[0]}){b64[1:]}[A-Za-z0-9+/_-]{{16,}}+={{0,2}}")
        hexed = forms[-1]
        patterns.append(f"{hexed[0]}(?<![0-9A-Fa-f]{hexed[0]}){hexed[1:]}(?i:[0-9a-f]{{20,}}+)")
    return patterns


def _encoded_literals(literal: str) -> tuple[str, ...]:
    """``literal``'s base64 form (its whole groups of three bytes; none when shorter) and hex form."""
    raw = literal.encode()
    b64 = base64.b64encode(raw).decode()[: 4 * (len(raw) // 3)]
    return (b64, raw.hex()) if len(b64) >= 4 else (raw.hex(),)


def _grouped_by_first_character(branches: Sequence[str]) -> str:
    """The alternation of ``branches`` (each starting with one plain character), written as one
    branch per first character holding the rest of each in their order: it matches what the
    plain alternation matches (only branches with the character at hand can match there, tried
    in the same order), but the engine reads a candidate's first character once, not once per
    branch."""
    rests: dict[str, list[str]] = {}
    for branch in branches:
        rests.setdefault(branch[0], []).append(branch[1:])
    return "|".join(f"{first}(?:{'|'.join(rest)})" for first, rest in rests.items())


_HEX_VALUE = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_MIN_RANDOM_LENGTH = 16
_MIN_ENTROPY_BITS = 3.0


def looks_random(value: str) -> bool:
    """Whether ``value`` reads as an encoded secret rather than a word, a path or a name:
    hex with letters and digits, or base64-like with upper and lower case, a digit and a
    spread of characters (detect-secrets' high-entropy plugins, with their 3.0-bit floor
    for hex, kept for both). A model id (``Qwen/Qwen2.5-0.5B``) has a dot; a path starts with
    one or a slash."""
    if len(value) < _MIN_RANDOM_LENGTH or value[0] in "/." or "." in value:
        return False
    digit, lower, upper = _character_kinds(value)
    if _HEX_VALUE.fullmatch(value):
        return digit and (lower or upper)
    return digit and lower and upper and _entropy(value) >= _MIN_ENTROPY_BITS


def _character_kinds(value: str) -> tuple[bool, bool, bool]:
    """Whether ``value`` has a digit, a lower-case and an upper-case letter."""
    return (
        any(c.isdigit() for c in value), any(c.islower() for c in value), any(c.isupper() for c in value)
    )


def _entropy(value: str) -> float:
    counts = {character: value.count(character) for character in set(value)}
    return -sum(count / len(value) * math.log2(count / len(value)) for count in counts.values())


def _starts_a_name(text: str, start: int) -> bool:
    """A keyword at ``start`` begins a word or a part of one (``client_secret``,
    ``X-Api-Key``, ``apiKey``), not the middle of another (``monkey``, ``design``)."""
    if start == 0:
        return True
    before, first = text[start - 1], text[start]
    return not _alphanumeric(before) or (first.isupper() and before.islower())


def _keyword_random(match: re.Match[str]) -> bool:
    return _starts_a_name(match.string, match.start()) and looks_random(match.group(1))


def _env_name(match: re.Match[str]) -> bool:
    start = match.start()
    return start == 0 or match.string[start - 1] == "_" or not _alphanumeric(match.string[start - 1])


def _jwt(match: re.Match[str]) -> bool:
    parts = re.sub(r"\s", "", match.group(0)).split(".")
    return len(parts) >= 2 and len(parts[0]) >= 10 and len(parts[1]) >= 10


def _base64_block(match: re.Match[str]) -> bool:
    return all(_character_kinds(match.group(0)))


_CHECKS: dict[str, Callable[[re.Match[str]], bool]] = {
    "keyword-random": _keyword_random,
    "env-name": _env_name,
    "jwt": _jwt,
    "random": _base64_block,
}


def _context_rule(context: ContextFormat) -> RedactionRule:
    return RedactionRule(
        context.rule_id,
        context.pattern,
        context.placeholder,
        group=context.group,
        accept=_CHECKS[context.check] if context.check else None,
        lines_with=re.compile(context.lines_with) if context.lines_with else None,
        found_before=re.compile(context.found_before) if context.found_before else None,
        longest=context.longest,
        scope=context.scope,
        needs=context.needs,
        gate=context.gate,
    )


def catalogue_rules() -> list[RedactionRule]:
    """The secret formats of :mod:`._secret_rules`, token formats first (their prefixes are
    the surest sign), then their encoded forms, then the formats found by context."""
    return token_rules() + context_rules()


def token_rules() -> list[RedactionRule]:
    """The catalogue's token formats and their base64 and hex forms."""
    rules = [
        RedactionRule(token.rule_id, _token_pattern(token), token.placeholder, scope="joined",
                      gate=_leading_literal(token.prefix))
        for token in TOKEN_FORMATS
    ]
    literals = [literal for token in TOKEN_FORMATS for literal in token.encodable] + list(ENCODED_PREFIXES)
    encoded = _grouped_by_first_character(_encoded_patterns(literals))
    gate = tuple(dict.fromkeys(form.lower() for literal in literals for form in _encoded_literals(literal)))
    rules.append(RedactionRule("encoded-token", encoded, "<SECRET>", scope="line", gate=gate))
    return rules


def _leading_literal(prefix: str) -> tuple[str, ...]:
    """The plain characters a token ``prefix`` (a pattern) starts with, in small letters, as a
    :attr:`RedactionRule.gate`; none when it has no such start or is an alternation."""
    if _is_alternation(prefix):
        return ()
    literal: list[str] = []
    index = 0
    while index < len(prefix):
        character = prefix[index]
        if character == "\\" and prefix[index + 1 : index + 2] in _ESCAPED_PLAIN:
            literal.append(prefix[index + 1])
            index += 2
            continue
        if character in _REGEX_SYNTAX:
            if character in "?*{" and literal:
                literal.pop()
            break
        literal.append(character)
        index += 1
    return ("".join(literal).lower(),) if literal else ()


_ESCAPED_PLAIN = frozenset(".-/_")
_REGEX_SYNTAX = frozenset("\\.^$*+?{}[]|()")


def _is_alternation(pattern: str) -> bool:
    """Whether ``pattern`` has a ``|`` outside its groups and classes."""
    depth, index, in_class = 0, 0, False
    while index < len(pattern):
        character = pattern[index]
        if character == "\\":
            index += 2
            continue
        if in_class:
            in_class = character != "]"
        elif character == "[":
            in_class = True
        elif character == "(":
            depth += 1
        elif character == ")":
            depth -= 1
        elif character == "|" and depth == 0:
            return True
        index += 1
    return False


_Trie: TypeAlias = dict[str, "_Trie"]


def _any_literal(literals: Iterable[str]) -> re.Pattern[str]:
    """Where any of ``literals`` starts, as a trie (one branch per next character, a literal's
    longer forms left out), so the engine tries a few characters at a candidate, not every
    literal."""
    trie: _Trie = {}
    for literal in literals:
        node = trie
        for character in literal:
            node = node.setdefault(character, {})
        node[""] = {}

    def branches(node: _Trie) -> str:
        if "" in node:
            return ""
        parts = [re.escape(character) + branches(child) for character, child in sorted(node.items())]
        return parts[0] if len(parts) == 1 else f"(?:{'|'.join(parts)})"

    return re.compile(branches(trie))


def context_rules() -> list[RedactionRule]:
    """The catalogue's formats found by their shape or what surrounds them."""
    return [_context_rule(context) for context in CONTEXT_FORMATS]


def keyword_rules() -> list[RedactionRule]:
    """Values named by the word before them (:mod:`._generic_secrets`): ``password=…`` in any
    case or separator, ``.netrc`` entries, ``--token VALUE`` and ``-u user:PASS``."""
    return [
        RedactionRule(
            "keyword-value", KEYWORD_VALUE, "<SECRET>", group="kvv", accept=keyword_value,
            lines_with=re.compile(KEYWORD_VALUE_LINES), resume_in="kvv", scope="line",
        ),
        RedactionRule("netrc", NETRC_LINE, "", rewrite=netrc_rewrite,
                      needs=("machine", "default"), lines_with=re.compile(NETRC_LINE_WORDS), scope="line"),
        RedactionRule("netrc-field", NETRC_FIELD, "<SECRET>", group=1,
                      needs=("password", "passwd", "login", "account"),
                      lines_with=re.compile(NETRC_FIELD_WORDS), scope="line"),
        RedactionRule("flag-value", FLAG_VALUE, "<SECRET>", group=1, needs=("-",), scope="line",
                      gate=FLAG_VALUE_WORDS),
        RedactionRule("user-flag-password", USER_FLAG_PASSWORD, "<SECRET>", group=1,
                      needs=("-",), scope="line", gate=("-u",)),
    ]


def generic_rules() -> list[RedactionRule]:
    """Credentials of no vendor the catalogue names: a run that reads as generated, a run at a
    ``...`` cut, the part of a token a joiner or a break (escaped or not) parts from a part
    already replaced, and a run broken by an escaped break (:mod:`._generic_secrets`)."""
    return [
        RedactionRule("generic-token", GENERIC_TOKEN, "<SECRET>", accept=generic_token,
                      scope="line"),
        RedactionRule("cut-token", CUT_TOKEN, "<SECRET>", accept=cut_token, needs=("...", "…"),
                      lines_with=re.compile(CUT_TOKEN_LINES), scope="joined"),
        RedactionRule("joined-token", JOINED_TOKEN, "<SECRET>", accept=joined_token,
                      needs=("<SECRET>", "<TOKEN>"), lines_with=re.compile(JOINED_TOKEN_LINES), scope="line"),
        RedactionRule("escaped-break-tail", ESCAPED_BREAK_TAIL, "<SECRET>", group=1,
                      accept=joined_token, needs=("<SECRET>", "<TOKEN>"),
                      lines_with=re.compile(ESCAPED_BREAK_TAIL_LINES), scope="line"),
        RedactionRule("line-break-tail", LINE_BREAK_TAIL, "<SECRET>", group=1,
                      accept=joined_token, needs=("<SECRET>", "<TOKEN>"), scope="joined"),
        RedactionRule("line-end-head", LINE_END_HEAD, "<SECRET>", accept=line_end_head,
                      needs=("<SECRET>", "<TOKEN>"), found_before=re.compile(LINE_END_HEAD_BEFORE),
                      longest=LINE_END_HEAD_LONGEST + 1, scope="joined"),
        RedactionRule("escaped-break-token", ESCAPED_BREAK_TOKEN, "<SECRET>",
                      accept=escaped_break_token, needs=("\\n", "\\r", "\\t"),
                      lines_with=re.compile(ESCAPED_BREAK_TOKEN_LINES), scope="line"),
    ]


def secret_env_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values of credential-looking variables (named in any case), longest first."""
    names = {
        name
        for name in environ
        if name.upper() in SECRET_ENV_NAMES or _SECRET_ENV_SUFFIX.search(name.upper())
    }
    return _clean((environ[name] for name in names), minimum=MIN_SECRET_LENGTH)


def compile_extra_patterns(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    """Compile ``[tool.specgate.redact]`` patterns, naming the one that is not a regex."""
    return compiled_patterns(patterns, "[tool.specgate.redact]")


@dataclass(frozen=True)
class Redactor:
    """Ordered rules; see the module docstring for why the order and the loop are safe."""

    rules: tuple[RedactionRule, ...]
    secret_literals: tuple[str, ...] = field(default=())
    """Values known to be secret (:mod:`._known_secrets`), masked before any rule runs, in every
    form a log spells them; :meth:`register_secret` adds more."""

    @cached_property
    def _known(self) -> _KnownSecrets:
        return _KnownSecrets(self.secret_literals)

    @property
    def known_secrets(self) -> tuple[str, ...]:
        """Every value this redactor masks by exact match."""
        return tuple(self._known.values)

    def register_secret(self, value: str) -> bool:
        """Mask ``value`` (and its encoded forms) from now on, here and in every
        :meth:`secrets_only` view; False when it is too short to mask (under 6 characters) or
        already known. Memoised redactions are dropped: text redacted before the value was
        known is redacted again when it is next met."""
        if not isinstance(value, str):
            raise TypeError(f"expected the secret as a string, found {type(value).__name__}")
        return self._known.add(value)

    def secrets_only(self) -> Redactor:
        """This redactor's credential rules alone, sharing the values it knows (those registered
        later too): for terminal lines and command output, where paths, user and host names stay
        readable for the person at the terminal and only credentials must go."""
        view = Redactor(tuple(rule for rule in self.rules if rule.name not in _IDENTITY_RULES))
        view.__dict__["_known"] = self._known
        return view

    def _memo(self) -> None:
        """Empty the memos when the known values changed since they were filled."""
        generation = self._known.generation
        if self._memo_generation[0] != generation:
            self._memo_generation[0] = generation
            self._short_texts.clear()
            self._long_texts.clear()
            self._long_held[0] = 0
            self.__dict__.pop("_secret_bytes", None)

    @cached_property
    def _memo_generation(self) -> list[int]:
        return [0]

    def text(self, text: str) -> str:
        self._memo()
        if len(text) > _CACHED_CHARS:
            return self._long_text(text) if len(text) <= _LONG_CACHED_CHARS else self._text(text)
        cache = self._short_texts
        redacted = cache.get(text)
        if redacted is None:
            if len(cache) >= _CACHED_TEXTS:
                cache.clear()
            redacted = cache[text] = self._text(text)
            cache[redacted] = redacted
        return redacted

    @cached_property
    def _short_texts(self) -> dict[str, str]:
        """Short strings recur in every record (keys, outcomes, node ids): redact each once.

        What :meth:`_text` returns is a fixed point of it (its loops stop only when a pass and
        the escape decoding change nothing, or at the placeholder, which no rule matches), so
        each result is memoised as its own redaction too: text redacted where it entered (a
        node id, a message) costs a lookup, not a rule pass, when the bundle writer's
        record-wide pass meets it again. Text from anywhere else still takes the full pass.
        """
        return {}

    def _long_text(self, text: str) -> str:
        """:meth:`text` for a longer text, memoised (as a fixed point too) like a short one, the
        memo emptied once the characters it holds pass :data:`_LONG_CACHED_TOTAL`."""
        cache = self._long_texts
        redacted = cache.get(text)
        if redacted is None:
            redacted = self._text(text)
            held = self._long_held
            held[0] += len(text) + len(redacted)
            if held[0] > _LONG_CACHED_TOTAL:
                cache.clear()
                held[0] = len(text) + len(redacted)
            cache[text] = redacted
            cache[redacted] = redacted
        return redacted

    @cached_property
    def _long_texts(self) -> dict[str, str]:
        return {}

    @cached_property
    def _long_held(self) -> list[int]:
        """Characters held by :attr:`_long_texts` (one mutable cell: the redactor is frozen)."""
        return [0]

    def _text(self, text: str) -> str:
        current = self._passes(text)
        for _ in range(_MAX_ROUNDS):
            decoded, changed = self._escaped_secrets(current)
            if decoded == current:
                return current
            current = self._passes(decoded, changed)
        return PLACEHOLDERS[0]

    def by_lines(self, text: str) -> str:
        """``text`` redacted line by line, every line through :meth:`text` and so memoised: a
        large ``evidence.md`` repeats its run-wide lines (a not-qualifying reason) in every AC
        block, and each of its lines is rendered from strings of records already redacted whole.
        A match spanning two lines is not sought: a line is the unit here, as a string is in
        a record."""
        return "\n".join(self.text(line) for line in text.split("\n"))

    def text_within(self, text: str, limit: int) -> str:
        """Redact first, then cut to ``limit`` characters: a cut never splits a secret in two."""
        redacted = self.text(text)
        return redacted if len(redacted) <= limit else redacted[: limit - 1] + "…"

    def _passes(self, text: str, changed: list[tuple[int, int]] | None = None) -> str:
        """Passes until one changes nothing. The first pass reads the whole text, or, given the
        spans of ``text`` that ``changed`` (the escape decoding's), their neighbourhood; each
        later pass reads only the neighbourhood of what the pass before it replaced, which finds
        what a pass over the whole text finds (:class:`_Neighbourhood` says why). A text of
        :data:`_SHORT_TEXT` characters or fewer is read whole in every pass: finding its
        neighbourhood costs more than the short-text check of every rule over all of it."""
        current = text
        for _ in range(_MAX_ROUNDS):
            near = None if len(current) <= _SHORT_TEXT else changed
            updated, changed = _replaced_with_spans(current, self._claims(current, near))
            if updated == current:
                return current
            current = updated
        return PLACEHOLDERS[0]

    def _claims(self, text: str, changed: Iterable[tuple[int, int]] | None = None) -> list[Claim]:
        """One pass's claims: every rule in order over the whole text, or, given the spans that
        ``changed`` since a pass over the whole text, over their :class:`_Neighbourhood`."""
        known = self._known.rule
        rules = self.rules if known is None else (known, *self.rules)
        if changed is None:
            claims = _protected(text, [(0, len(text))])
            lowered = folded(text)
            lines_found: dict[re.Pattern[str], list[tuple[int, int]]] = {}
            gated = partial(_within_gate_reach, lowered)
            short = len(text) <= _SHORT_TEXT
            for rule in rules:
                if (rule.needs or rule.gate) and not rule.may_match(text, gated):
                    continue
                # Most rules find nothing in most texts. In a short one, a rule is first asked
                # once whether it can claim anything: its line scan finds a line, or else its
                # pattern a match (its claims come from those); only a rule that finds something
                # merges its claims (the search reads the text alone, not the claims).
                if short:
                    if rule.lines_with is not None and lowered is not None:
                        if rule.lines_with.search(lowered) is None:
                            continue
                    elif rule.pattern.search(text) is None:
                        continue
                claimed = rule.claims_in_text(text, lowered, lines_found)
                first = next(claimed, None)
                if first is not None:
                    claims = _claim(text, claims, rule, chain((first,), claimed))[0]
            return claims
        near = _Neighbourhood(text, changed)
        # The placeholders a search may meet: those in the windows searched; all of them once a
        # rule searching the whole text finds something.
        covered = near.joined()
        claims, everywhere = _protected(text, covered), False
        window_lines: dict[re.Pattern[str], tuple[object, list[tuple[int, int]]]] = {}
        whole = [(0, len(text))]
        for rule in rules:
            windows = whole if rule.scope == "text" else near.lines if rule.scope == "line" else near.joined()
            if not rule.may_match(text, partial(near.gated, windows)):
                continue
            if not everywhere and near.joined() is not covered:
                covered = near.joined()
                claims = sorted({*claims, *_protected(text, covered)})
            found: Iterable[tuple[Claim, int, int]]
            if rule.scope == "text":
                found = list(rule.claims(text, 0, len(text)))
                if found and not everywhere:
                    claims, everywhere = sorted({*claims, *_protected(text, [(0, len(text))])}), True
            else:
                found = rule.claims_in_windows(text, windows, near.lowered(windows), window_lines)
            claims, added = _claim(text, claims, rule, found)
            if added:
                near.touch((start, end) for start, end, _ in added)
        return claims

    def _escaped_secrets(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """Escaped words (with the word before them, for context like ``Bearer``) whose decoded
        form holds something to redact, replaced by that form redacted; and where they were."""
        units = _escaped_units(text)
        if not units:
            return text, []
        decoded = [_unescaped(text[start:end]) for start, end in units]
        redacted = self._passes(_UNIT_SEPARATOR.join(decoded)).split(_UNIT_SEPARATOR)
        if len(redacted) != len(decoded):
            redacted = [self._passes(unit) for unit in decoded]
        changes = [
            (start, end, clean)
            for (start, end), plain, clean in zip(units, decoded, redacted, strict=True)
            if clean != plain
        ]
        return _replaced_with_spans(text, changes) if changes else (text, [])

    def value(self, value: object) -> JsonValue:
        """Plain-JSON copy of ``value`` with every string, key or not, redacted."""
        return self.values([value])[0]

    def values(self, documents: Sequence[object]) -> list[JsonValue]:
        """:meth:`value` of each document, a container that several of them hold (the run's
        facts, the same objects in every AC record of a run) converted and redacted once: the
        results share its redacted copy, so nothing may change a result in place.

        Every string, key or not, goes through :meth:`text`; the memo is read here first
        because a bundle's records are mostly strings it already holds."""
        shared: dict[int, tuple[object, JsonValue]] = {}
        self._memo()
        memo, text = self._short_texts, self.text

        def walk(node: object) -> JsonValue:
            if isinstance(node, str):
                known = memo.get(node)
                return text(node) if known is None else known
            if not isinstance(node, Mapping | list | tuple):
                plain = to_jsonable(node)
                return plain if plain is None or isinstance(plain, bool | int | float) else walk(plain)
            hit = shared.get(id(node))
            if hit is not None and hit[0] is node:
                return hit[1]
            result: JsonValue
            if isinstance(node, Mapping):
                items = {str(key): item for key, item in node.items()}
                redacted: dict[str, JsonValue] = {}
                for key in sorted(items):
                    item = items[key]
                    keep = key in _DIGEST_KEYS and isinstance(item, str) and _HEX_DIGEST.match(item)
                    known = memo.get(key)
                    redacted[_unique_key(text(key) if known is None else known, redacted)] = (
                        item if keep else walk(item)
                    )
                result = redacted
            else:
                result = [walk(item) for item in node]
            shared[id(node)] = (node, result)
            return result

        return [walk(document) for document in documents]

    def valid_value(
        self,
        value: object,
        invalid_paths: Callable[[JsonValue], Iterable[Sequence[str | int]]],
        vocabulary: frozenset[str],
    ) -> JsonValue:
        """:meth:`value`, except where redaction made a valid document invalid
        (``invalid_paths``): a string there gets its original back, and so does an object key
        that is a word of the schema's ``vocabulary``. A schema-constrained value (an enum, a
        digest, a timestamp) or a schema's own key holds no free text to leak, so a user named
        ``default`` or a pattern matching ``passed`` cannot make a record fail its schema."""
        original = to_jsonable(value)
        redacted = self.value(original)
        if redacted == original:
            return redacted
        broken = list(invalid_paths(redacted))
        if not broken or list(invalid_paths(original)):
            return redacted
        for path in sorted(broken, key=len, reverse=True):
            before, after = _at(original, path), _at(redacted, path)
            if isinstance(before, str) and isinstance(after, str):
                _put(redacted, path, before)
            elif isinstance(before, dict) and isinstance(after, dict):
                _put(redacted, path, _keys_restored(self, before, after, vocabulary))
        return redacted

    @cached_property
    def _secret_bytes(self) -> tuple[bytes, ...]:
        forms = []
        for literal in self.known_secrets:
            forms += [literal.encode(), literal.encode("utf-16-le"), literal.encode("utf-16-be")]
        return tuple(forms)

    def binary(self, data: bytes) -> bytes:
        """The credentials this redactor knows, in UTF-8 and UTF-16, replaced in raw bytes."""
        self._memo()
        for literal in self._secret_bytes:
            data = data.replace(literal, b"<SECRET>")
        return data

    def bytes_(self, data: bytes, depth: int = 0) -> bytes:
        """Text redacted as text (through every reading when a few bytes do not decode),
        containers opened and rebuilt; binary content (not text, or an image) unchanged:
        :class:`RefusedPayload` when a credential shows in any reading of it
        (:data:`_BYTE_VIEWS`), since rewriting bytes in place would break the file, and for a
        container that cannot be opened."""
        rebuilt = container_redaction(data, depth, self.bytes_)
        if rebuilt is not None:
            return rebuilt
        form = None if is_image(data) else text_form(data)
        if form is not None:
            return form.encode(self.text(form.decode(data)))
        if is_mostly_text(data):
            return self._text_with_stray_bytes(data)
        if self._holds_credential(data):
            raise RefusedPayload(
                f"binary content ({len(data)} bytes, not text) holds what reads as a credential; "
                "it is withheld, not rewritten in place"
            )
        return data

    def _text_with_stray_bytes(self, data: bytes) -> bytes:
        """Text with a few bytes that do not decode, redacted in every reading, the bytes kept."""
        current = data
        for _ in range(_MAX_ROUNDS):
            updated = current
            for codec, errors in _BYTE_VIEWS:
                updated = self._through(updated, codec, errors)
            updated = self.binary(updated)
            if updated == current:
                return current
            current = updated
        return PLACEHOLDERS[0].encode()

    def _holds_credential(self, data: bytes) -> bool:
        """Whether a known secret is in ``data``, or a credential rule matches what of it a reader
        can read (all of it but a PNG's pixel data, :func:`png_readable_parts`) in any reading."""
        credentials = self._credentials_view
        readable = png_readable_parts(data)
        readable = data if readable is None else readable
        return self.binary(data) != data or any(
            credentials._through(readable, codec, errors) != readable for codec, errors in _BYTE_VIEWS
        )

    @cached_property
    def _credentials_view(self) -> Redactor:
        return self.secrets_only()

    def _through(self, data: bytes, codec: str, errors: str) -> bytes:
        """``data`` read as ``codec`` (every byte kept by ``errors``), redacted, written back."""
        whole = len(data) - len(data) % 2 if codec.startswith("utf-16") else len(data)
        text = data[:whole].decode(codec, errors)
        redacted = self.text(text)
        return data if redacted == text else redacted.encode(codec, errors) + data[whole:]

    def encode(self, payload: JsonValue | str | bytes) -> bytes:
        """The bytes evidence may write for ``payload``: every write goes through here.

        ``bytes`` are redacted in every encoding and container that can hide text (see
        :meth:`bytes_`; raises :class:`RefusedPayload` for what cannot be opened); ``str``
        as text; anything else as a JSON document.
        """
        if isinstance(payload, bytes):
            return self.bytes_(payload)
        if isinstance(payload, str):
            return self.text(payload).encode()
        return self.json_bytes(payload)

    def json_bytes(self, value: object) -> bytes:
        """The evidence-file form of a JSON document (a bare string included)."""
        return pretty_json(self.value(value)).encode()


class _KnownSecrets:
    """The values a redactor masks by exact match, the one rule masking them all, and a count of
    changes that tells every redactor sharing them when its memos went stale."""

    def __init__(self, values: Iterable[str]) -> None:
        self.values: dict[str, None] = dict.fromkeys(usable_secrets(values))
        self.generation = 0
        self.rule = self._rule()

    def add(self, value: str) -> bool:
        if value in self.values or not usable_secrets([value]):
            return False
        self.values[value] = None
        self.generation += 1
        self.rule = self._rule()
        return True

    def _rule(self) -> RedactionRule | None:
        pattern = mask_pattern(self.values)
        return None if pattern is None else RedactionRule("known-secret", pattern.pattern, "<SECRET>")


_IDENTITY_RULES = frozenset({
    "email", "rootdir", "rootdir-inside", "path", "windows-profile", "home", "home-inside", "ipv4", "ipv6",
    "host", "user", "path-identity", "cloud-internal-host",
})
"""Rules that hide who ran a run and where, not credentials: :meth:`Redactor.secrets_only` leaves
them out."""


def _claim(
    text: str, claims: list[Claim], rule: RedactionRule, found: Iterable[tuple[Claim, int, int]]
) -> tuple[list[Claim], list[Claim]]:
    """``claims`` plus what ``rule`` claims (``found``: its claims with their matches' spans) in
    the text they leave free; and those new claims.

    A match that runs into an earlier claim is not dropped: the rule searches again inside
    the free gaps that match touched, as if each gap were a text of its own, for matches that
    start on the lines the match spans. That keeps a claim's effect local: a match never makes
    the rule search lines far from it (a gap can run on for pages), which the later passes rely
    on (:class:`_Neighbourhood`).
    """
    accepted: list[Claim] = []
    searched: set[tuple[int, int]] = set()
    index = 0
    for claim, match_start, match_end in found:
        while index < len(claims) and claims[index][1] <= match_start:
            index += 1
        if index == len(claims) or claims[index][0] >= match_end:
            accepted.append(claim)
            continue
        lines_start = text.rfind("\n", 0, match_start) + 1
        lines_end = text.find("\n", match_end)
        lines_end = len(text) if lines_end < 0 else lines_end
        for gap_start, gap_end in _gaps_touched(claims, index, match_start, match_end, len(text)):
            gap = max(gap_start, lines_start), gap_end
            if gap[0] <= lines_end and gap not in searched:
                searched.add(gap)
                for inner, inner_start, _ in rule.claims(text, *gap):
                    if inner_start > lines_end:
                        break
                    accepted.append(inner)
    if not accepted:
        return claims, []
    accepted.sort()
    added = _without_overlaps(accepted)
    return sorted(claims + added), added


_FOLDS = str.maketrans({"ſ": "s", "ı": "i"})
"""The two letters Python's case-insensitive matching equates with a small ASCII letter that
``str.lower`` leaves alone (``re``'s own table of equivalences); the Kelvin sign lowers to ``k``."""


def folded(text: str) -> str | None:
    """``text`` in small letters, each character at its own index, so that a word a rule matches in
    any case shows in one spelling; None when lowering changes the length (``İ`` lowers to two
    characters), and the rules then search the whole text."""
    lowered = text.lower()
    if len(lowered) != len(text):
        return None
    return lowered.translate(_FOLDS) if "ſ" in lowered or "ı" in lowered else lowered


def _lines_matching(gate: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """The lines of ``text`` that ``gate`` matches in, each with its line break, neighbours
    merged: one search per line found, the rest skipped at the speed of the regex engine."""
    windows: list[tuple[int, int]] = []
    position, length = 0, len(text)
    while position < length:
        found = gate.search(text, position)
        if found is None:
            break
        newline = text.rfind("\n", position, found.start())
        start = position if newline < 0 else newline + 1
        end = text.find("\n", found.start())
        end = length if end < 0 else end + 1
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
        position = end
    return windows


def _gaps_touched(
    claims: list[Claim], index: int, start: int, end: int, length: int
) -> Iterator[tuple[int, int]]:
    """The free gaps between ``claims`` that overlap ``[start, end)``; ``claims[index]`` is the
    first claim ending after ``start``."""
    gap_start = claims[index - 1][1] if index > 0 else 0
    while True:
        gap_end = claims[index][0] if index < len(claims) else length
        if gap_start < gap_end and gap_start < end and gap_end > start:
            yield gap_start, gap_end
        if index >= len(claims) or gap_end >= end:
            return
        gap_start = claims[index][1]
        index += 1


_JOINING = re.compile(r"(?:[\w.+/@=:\"'-]|<(?:SECRET|TOKEN)>)\Z")
"""How a line ends (blank space aside) that a ``joined`` rule's match may carry on past, or whose
end a verdict on the next line may read: see :class:`_Neighbourhood`."""
_MERGED_GAP = 256
"""Windows of lines this close are searched as one: a search costs a call per window, and the
quiet lines between two windows add nothing (see :class:`_Neighbourhood`)."""


def _may_join_next(text: str, start: int, end: int) -> bool:
    """Whether the line ``text[start:end]`` (``end`` at its line break) is blank or ends, blank
    space aside, with a character in :data:`_JOINING`: only after such a line can a ``joined``
    rule's match hold the line break, or its verdict read past it."""
    position = end
    while position > start and text[position - 1].isspace():
        position -= 1
    return position == start or _JOINING.search(text, max(start, position - 8), position) is not None


def _line_end(text: str, position: int) -> int:
    """Where the line holding ``position`` ends: its line break, or the end of the text."""
    end = text.find("\n", position)
    return len(text) if end < 0 else end


class _Neighbourhood:
    """What a pass after the first searches: the lines its changes lie on, and, for a ``joined``
    rule, the lines a match can join to them (``RedactionRule.scope``).

    Why nothing outside can change. Let P be the text the pass before made its claims in and T
    the text after them (or P a text no rule claims anything in, and T P with escaped words
    decoded); by induction the pass over P claimed what a pass over the whole of P claims.
    Replacements hold no line break, so a line of T that no changed span touches is a line of P,
    character for character, between the same line breaks; call it quiet while no claim of this
    pass touches it either. Every claim of P was replaced, so P's pass claimed nothing on it.

    1. A ``line`` rule's pattern never matches a line break, and its verdict reads its own line
       (at most the line break before it); a search again after a match that ran into a claim
       is cut to the match's lines (:func:`_claim`); the claims on a quiet line are the same
       placeholders in P and T. So on a quiet line of T the rule does what it did on that line
       of P: claim nothing. It searches :attr:`lines`, which hold every line that is not quiet.
    2. A ``joined`` rule's match holds a line break, or its look-ahead or verdict reads across
       one, only when the line before the break :func:`_may_join_next` (a catalogue token's
       break follows a body character, a JWT's a JWT character or its dot, a PEM body's a base64
       character, the blank space after ``Bearer`` or ``Authorization:`` follows the word, ``=``
       or ``:``, a tail after a break follows a placeholder's ``>``, a token's first part before
       its rest's placeholder ends in a token character, the ``user=`` or the digest's name a
       verdict reads ends in a word character, ``=``, ``:``, a quote or ``-``). :meth:`joined`
       extends :attr:`lines` across every break after such a line, up and down, and always one
       line down from each of them (their last character may have been another in P). Each
       line outside is then quiet and each break bounding a block of them follows a quiet line
       that does not join: no match holds it or reads past it, in T or in P. So the whole-text
       search splits at those breaks: on a block it finds what it found on the same block of P,
       which claimed nothing (a search again stays within the match's lines), and in a window,
       searched with the window's ends as the text's, it finds what the whole-text search finds
       there.
    3. A ``text`` rule (the user's patterns, known values, a private key's block) searches all.

    Each rule's new claims add their lines before the next rule runs, so every line outside
    :attr:`lines` stays quiet. tests/evidence/test_redact_passes.py compares the result with
    whole-text passes.
    """

    def __init__(self, text: str, changed: Iterable[tuple[int, int]]) -> None:
        self.text = text
        self.lines: list[tuple[int, int]] = []
        """Whole lines (each window ends at a line break or the text's end), sorted, apart."""
        self._joined: list[tuple[int, int]] | None = None
        self._lowered: dict[int, tuple[list[tuple[int, int]], list[str | None]]] = {}
        self._gated: dict[int, tuple[list[tuple[int, int]], str | None]] = {}
        self.touch(changed)

    def lowered(self, windows: list[tuple[int, int]]) -> list[str | None]:
        """The :func:`folded` form of each of ``windows`` (:attr:`lines` or :meth:`joined`)."""
        cached = self._lowered.get(id(windows))
        if cached is None or cached[0] is not windows:
            cached = windows, [folded(self.text[start:end]) for start, end in windows]
            self._lowered[id(windows)] = cached
        return cached[1]

    def gated(self, windows: list[tuple[int, int]]) -> str | None:
        """What a rule's gate reads of ``windows``: their :func:`folded` forms joined by line
        breaks (a literal found across two of them only makes the rule search); None when one
        has no folded form or they hold more than :data:`_GATED_CHARS` characters."""
        if sum(end - start for start, end in windows) > _GATED_CHARS:
            return None
        cached = self._gated.get(id(windows))
        if cached is None or cached[0] is not windows:
            forms = [folded(self.text[start:end]) for start, end in windows]
            cached = windows, None if None in forms else "\n".join(form or "" for form in forms)
            self._gated[id(windows)] = cached
        return cached[1]

    def touch(self, spans: Iterable[tuple[int, int]]) -> None:
        """Add the lines ``spans`` lie on (a new list, so a cache keyed by the old one expires)."""
        text, lines = self.text, self.lines
        starts = [start for start, _ in lines]
        new: list[tuple[int, int]] = []
        for start, end in spans:
            if new and start <= new[-1][1]:
                if end > new[-1][1]:
                    new[-1] = (new[-1][0], _line_end(text, end))
                continue
            index = bisect.bisect_right(starts, start) - 1
            if index >= 0 and lines[index][1] >= end:
                continue
            new.append((text.rfind("\n", 0, start) + 1, _line_end(text, end)))
        if not new:
            return
        merged: list[tuple[int, int]] = []
        for start, end in sorted(lines + new):
            if merged and start <= merged[-1][1] + _MERGED_GAP:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        self.lines, self._joined = merged, None

    def joined(self) -> list[tuple[int, int]]:
        """:attr:`lines`, each window extended across the line breaks a match can hold."""
        if self._joined is not None:
            return self._joined
        text, length, lines = self.text, len(self.text), self.lines
        windows: list[tuple[int, int]] = []
        for index, (start, end) in enumerate(lines):
            floor = windows[-1][1] if windows else -1
            while start > floor + 1:
                above = text.rfind("\n", 0, start - 1) + 1
                if not _may_join_next(text, above, start - 1):
                    break
                start = above
            if not windows or end >= windows[-1][1]:
                following = lines[index + 1][0] if index + 1 < len(lines) else length + 1
                if end < length:
                    end = _line_end(text, end + 1)
                while end + 1 < following and _may_join_next(text, text.rfind("\n", 0, end) + 1, end):
                    end = _line_end(text, end + 1)
            if windows and start <= windows[-1][1] + 1:
                windows[-1] = (windows[-1][0], max(end, windows[-1][1]))
            else:
                windows.append((start, end))
        self._joined = windows
        return windows


def _within_gate_reach(lowered: str | None) -> str | None:
    return lowered if lowered is not None and len(lowered) <= _GATED_CHARS else None


def _protected(text: str, windows: Iterable[tuple[int, int]]) -> list[Claim]:
    """The spans :data:`_PROTECTED` matches in ``windows`` (none crosses a line), each claimed
    by itself: no rule may claim them."""
    return [
        (span.start(), span.end(), span.group(0))
        for start, end in windows
        for span in _PROTECTED.finditer(text, start, end)
    ]


def _without_overlaps(claims: list[Claim]) -> list[Claim]:
    kept: list[Claim] = []
    for claim in claims:
        if not kept or claim[0] >= kept[-1][1]:
            kept.append(claim)
    return kept


def _replaced_with_spans(text: str, claims: Iterable[Claim]) -> tuple[str, list[tuple[int, int]]]:
    """:func:`_replaced`, and the spans of the new text that replaced something different."""
    pieces: list[str] = []
    changed: list[tuple[int, int]] = []
    position = length = 0
    for start, end, replacement in claims:
        kept = text[position:start]
        pieces += [kept, replacement]
        length += len(kept)
        if replacement != text[start:end]:
            changed.append((length, length + len(replacement)))
        length += len(replacement)
        position = end
    pieces.append(text[position:])
    return "".join(pieces), changed


def _replaced(text: str, claims: Iterable[Claim]) -> str:
    pieces, position = [], 0
    for start, end, replacement in claims:
        pieces += [text[position:start], replacement]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _escaped_units(text: str) -> list[tuple[int, int]]:
    """Spans of the words holding an escape, each with the word before it and the word after
    it (:data:`_FOLLOWING_WORD`); units that touch merge; linear in ``text``: no search looks
    back past the previous escaped word, and an escape in a unit's last word only adds the
    word after that one."""
    units: list[tuple[int, int]] = []
    floor = last_word = 0
    for escape in _ESCAPE.finditer(text):
        if units and escape.start() < units[-1][1]:
            if escape.start() >= last_word:
                last_word, end = _with_following_word(text, units[-1][1])
                units[-1] = (units[-1][0], end)
            continue
        word = _word_start(text, floor, escape.start())
        start = before = word
        while before > floor and text[before - 1] in " \t\r\n":
            before -= 1
        if floor < before < word:
            start = _word_start(text, floor, before)
        last_word, end = _with_following_word(text, _WORD.match(text, escape.end()).end())  # type: ignore[union-attr]
        if units and start < units[-1][1]:
            units[-1] = (units[-1][0], end)
        else:
            units.append((start, end))
        floor = word
    return units


def _with_following_word(text: str, end: int) -> tuple[int, int]:
    """Where the word after ``end`` starts (``end`` when there is none) and where it ends."""
    following = _FOLLOWING_WORD.match(text, end)
    if following is None:
        return end, end
    return following.end() - len(following.group(0).lstrip()), following.end()


def _word_start(text: str, floor: int, position: int) -> int:
    last_space = _UP_TO_LAST_SPACE.match(text, floor, position)
    return floor if last_space is None else last_space.end()


def _unescaped(text: str) -> str:
    """``text`` with JSON, ``\\x`` and percent escapes of printable characters decoded, repeatedly
    (``%255F`` is ``_``); quotes and backslashes stay escaped so JSON text stays JSON."""

    def decode(match: re.Match[str]) -> str:
        if match.group(3):
            return "/"
        return escaped_character(match.group(1) or match.group(2) or match.group(4)) or match.group(0)

    current = text
    while True:
        updated = _ESCAPE.sub(decode, current)
        if updated == current:
            return current
        current = updated


def _keys_restored(
    redactor: Redactor,
    original: dict[str, JsonValue],
    redacted: dict[str, JsonValue],
    vocabulary: frozenset[str],
) -> dict[str, JsonValue]:
    """``redacted`` with each key that is a schema word spelled as it was before redaction."""
    restored = dict(redacted)
    for key in original:
        changed = redactor.text(key)
        if key in vocabulary and changed != key and changed in restored:
            restored[key] = restored.pop(changed)
    return restored


def _at(value: JsonValue, path: Sequence[str | int]) -> JsonValue:
    for part in path:
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _put(value: JsonValue, path: Sequence[str | int], item: JsonValue) -> None:
    if not path:
        return
    parent = _at(value, path[:-1])
    try:
        parent[path[-1]] = item
    except (KeyError, IndexError, TypeError):
        return


def _unique_key(key: str, taken: Mapping[str, object]) -> str:
    """Two keys can redact to the same text; keep both instead of losing one."""
    if key not in taken:
        return key
    counter = 2
    while f"{key}#{counter}" in taken:
        counter += 1
    return f"{key}#{counter}"


def is_text(data: bytes) -> bool:
    """Whether ``data`` is text in some encoding (UTF-8, or UTF-16/32 with a BOM or NUL pattern)."""
    return text_form(data) is not None


def build_redactor(
    rootdir: Path | None,
    extra_patterns: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    identity: LocalIdentity | None = None,
) -> Redactor:
    """The redactor for this machine: repo paths become repo-relative, the rest placeholders."""
    env = os.environ if environ is None else environ
    who = LocalIdentity.probe(env) if identity is None else identity
    secrets = known_secret_values(env, secret_env_values(env))
    rules: list[RedactionRule] = [
        RedactionRule("extra", pattern.pattern, "<REDACTED>")
        for pattern in compile_extra_patterns(extra_patterns)
    ]
    rules += token_rules() + keyword_rules() + context_rules()
    rules += [
        RedactionRule("bearer", _BEARER, "<TOKEN>", group=1, scope="joined", gate=("bearer",)),
        RedactionRule("auth-header", _AUTH_HEADER, "<TOKEN>", group=1, scope="joined",
                      gate=("authorization",)),
        RedactionRule("url-credentials", _URL_CREDENTIALS, "<SECRET>", group=1, scope="line", gate=("://",)),
        RedactionRule("email", _EMAIL, "<EMAIL>", lines_with=_AT_SIGN, scope="line"),
    ]
    for root in _root_spellings(rootdir):
        rules += _directory_rules(root, inside="", itself=".", name="rootdir")
    rules.append(RedactionRule("path", _SENSITIVE_PATH, "<PATH>", scope="line",
                               gate=tuple("/" + root.lower() for root in SENSITIVE_PATH_ROOTS)))
    rules.append(RedactionRule("windows-profile", _WINDOWS_PROFILE, "<PATH>", lines_with=_DRIVE_SEPARATOR,
                               scope="line"))
    rules += generic_rules()
    for home in who.home_dirs:
        if home != "/":
            rules += _directory_rules(home, inside="<HOME>/", itself="<HOME>", name="home")
    rules += [
        RedactionRule("ipv4", _IPV4_CANDIDATE, "<IP>", accept=_is_public_ip, lines_with=_DOTTED_QUAD,
                      scope="line"),
        RedactionRule("ipv6", _IPV6_CANDIDATE, "<IP>", accept=_is_public_ipv6, lines_with=_COLON_GROUP,
                      scope="line"),
    ]
    rules += _identity_rule(who.host_names, "<HOST>", "host")
    rules += _identity_rule(who.user_names, "<USER>", "user")
    rules += _path_identity_rule(who.user_names, who.host_names)
    return Redactor(rules=tuple(rules), secret_literals=secrets)


def _root_spellings(rootdir: Path | None) -> tuple[str, ...]:
    if rootdir is None:
        return ()
    spellings = {str(rootdir), os.path.realpath(rootdir)}
    return tuple(sorted((s for s in spellings if len(s) > 1), key=lambda s: (-len(s), s)))


def write_redacted(redactor: Redactor, path: Path, payload: JsonValue | str | bytes) -> bytes:
    """Atomically write the redacted form of ``payload``; return the bytes written."""
    data = redactor.encode(payload)
    replace_atomically(path, data)
    return data


def append_redacted(redactor: Redactor, path: Path, text: str) -> None:
    """Append redacted text (for files other tools own, like ``$GITHUB_STEP_SUMMARY``)."""
    with path.open("ab") as handle:
        handle.write(redactor.encode(text))

