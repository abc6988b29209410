"""Redaction: the one gate every byte of evidence passes before it reaches disk.

Evidence is pasted into pull requests, so it must not carry who ran it, where, or any
credential. :meth:`Redactor.encode` is the only way evidence files get their bytes; it
redacts strings *inside* a JSON structure (keys too) before serializing, so the result stays
valid JSON. Text is rewritten until nothing changes, and placeholders are never rewritten,
which makes redaction idempotent and guarantees it terminates (every rewrite turns at least
one character of ordinary text into a placeholder).
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import pwd
import re
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pytest

from pytest_specgate.evidence._jsonio import JsonValue, pretty_json, replace_atomically, to_jsonable

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
    "|".join(re.escape(token) for token in PLACEHOLDERS) + r"|\b(?:ac|bundle)-sha256=[0-9a-f]{64}\b"
)
"""Placeholders, and the digests of a markdown digest line, which no rule may rewrite."""
_DIGEST_KEYS = frozenset({"sha256", "bundle_sha256", "commit", "gitCommit"})
_HEX_DIGEST = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")

SECRET_ENV_NAMES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY")
_SECRET_ENV_SUFFIX = re.compile(r"(?:TOKEN|SECRET|PASSWORD|API_KEY)$")
MIN_SECRET_LENGTH = 6
"""Shorter environment values are not credentials; replacing them would shred the text."""

SENSITIVE_PATH_ROOTS = ("Users", "home", "root", "opt", "mnt", "data", "private", "var/folders")
_PATH_TAIL = r"(?:/[^\s\"'`<>|;,()\[\]{}]*)?"
_SENSITIVE_PATH = re.compile(
    r"(?<![\w.-])/(?:"
    + "|".join(re.escape(root) for root in SENSITIVE_PATH_ROOTS)
    + r")(?![\w.-])"
    + _PATH_TAIL,
    re.ASCII,
)
_HF_TOKEN = re.compile(r"hf_[A-Za-z0-9]{30,}")
_API_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{20,}", re.ASCII)
_BEARER = re.compile(r"\bbearer\s+([A-Za-z0-9._~+/=-]{8,})", re.ASCII | re.IGNORECASE)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_IPV4_CANDIDATE = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])")
_IPV6_CANDIDATE = re.compile(
    r"(?<![0-9A-Fa-f:])"
    r"(?=[0-9A-Fa-f:]*[0-9A-Fa-f])"
    r"(?=[0-9A-Fa-f:]*::|(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f])"
    r"[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![0-9A-Za-z_:])"
)
"""An address has a hex digit and either ``::`` or eight groups, and ends where a word does: so
the ``::`` of a node id (``test_x.py::Class::test``) and ``HH:MM:SS`` never reach the rule pass."""
_HF_TOKEN_BYTES = re.compile(rb"hf_[A-Za-z0-9]{30,}")
_BACKREFERENCE = re.compile(r"\\[1-9]|\(\?P=")
"""Backreferences would be renumbered inside the combined prefilter, so they disable it."""
NOT_HOST_NAMES = frozenset({"localhost", "localhost.localdomain"})


@dataclass(frozen=True)
class RedactionRule:
    """Replace what ``pattern`` matches (or only its group ``group``) with ``replacement``."""

    name: str
    pattern: re.Pattern[str]
    replacement: str
    group: int = 0
    accept: Callable[[str], bool] | None = None

    def apply(self, text: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            found = match.group(self.group)
            if not found or (self.accept is not None and not self.accept(found)):
                return match.group(0)
            whole = match.group(0)
            start = match.start(self.group) - match.start(0)
            end = match.end(self.group) - match.start(0)
            return whole[:start] + self.replacement + whole[end:]

        return self.pattern.sub(substitute, text)


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


def _is_public_ip(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return not address.is_loopback


def _is_public_ipv6(text: str) -> bool:
    """Two hex groups at least, so ``test.py::test_a`` or ``a::b`` never count as addresses."""
    return sum(1 for group in text.split(":") if group) >= 2 and _is_public_ip(text)


def _bounded_literal(literal: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(literal) + r"(?![A-Za-z0-9])", re.IGNORECASE)


def _directory_rules(directory: str, inside: str, itself: str, name: str) -> list[RedactionRule]:
    escaped = re.escape(directory.rstrip("/"))
    return [
        RedactionRule(f"{name}-inside", re.compile(escaped + "/"), inside),
        RedactionRule(name, re.compile(escaped + r"(?![\w.-])", re.ASCII), itself),
    ]


def secret_env_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values of credential-looking variables, longest first."""
    names = {name for name in environ if name in SECRET_ENV_NAMES or _SECRET_ENV_SUFFIX.search(name)}
    return _clean((environ[name] for name in names), minimum=MIN_SECRET_LENGTH)


def compile_extra_patterns(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    """Compile ``[tool.specgate.redact]`` patterns, naming the one that is not a regex."""
    compiled = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern:
            raise pytest.UsageError(
                f"[tool.specgate.redact]: expected a non-empty regular expression string, found {pattern!r}"
            )
        try:
            compiled.append(re.compile(pattern))
        except re.error as error:
            raise pytest.UsageError(
                f"[tool.specgate.redact]: pattern {pattern!r} is not a valid regular expression: {error}"
            ) from None
    return tuple(compiled)


@dataclass(frozen=True)
class Redactor:
    """Ordered rules; see the module docstring for why the order and the loop are safe."""

    rules: tuple[RedactionRule, ...]
    secret_literals: tuple[str, ...] = field(default=())

    def text(self, text: str) -> str:
        current = text
        while True:
            pieces = _split_protected(current)
            updated = "".join(piece if protected else self._segment(piece, 0) for piece, protected in pieces)
            if updated == current:
                return current
            current = updated

    def _segment(self, segment: str, first_rule: int) -> str:
        """One pass of rules ``first_rule..`` over text holding no protected span."""
        if self._any_rule is not None and self._any_rule.search(segment) is None:
            return segment
        for index in range(first_rule, len(self.rules)):
            updated = self.rules[index].apply(segment)
            if updated != segment:
                return "".join(
                    piece if protected else self._segment(piece, index + 1)
                    for piece, protected in _split_protected(updated)
                )
        return segment

    @cached_property
    def _any_rule(self) -> re.Pattern[str] | None:
        """All rules as one alternation: text it does not match needs no rule at all."""
        if any(_BACKREFERENCE.search(rule.pattern.pattern) for rule in self.rules):
            return None
        scoped = [f"(?{_flag_letters(rule.pattern)}:{rule.pattern.pattern})" for rule in self.rules]
        try:
            return re.compile("|".join(scoped)) if scoped else None
        except re.error:
            return None

    def value(self, value: object) -> JsonValue:
        """Plain-JSON copy of ``value`` with every string, key or not, redacted."""
        return self._redact_json(to_jsonable(value))

    def _redact_json(self, value: JsonValue) -> JsonValue:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._redact_json(item) for item in value]
        if isinstance(value, dict):
            redacted: dict[str, JsonValue] = {}
            for key in sorted(value):
                item = value[key]
                keep = key in _DIGEST_KEYS and isinstance(item, str) and _HEX_DIGEST.match(item)
                redacted[_unique_key(self.text(key), redacted)] = item if keep else self._redact_json(item)
            return redacted
        return value

    @cached_property
    def _secret_bytes(self) -> tuple[bytes, ...]:
        return tuple(literal.encode() for literal in self.secret_literals)

    def binary(self, data: bytes) -> bytes:
        """Binary artifacts keep their bytes except credentials, which never pass."""
        for literal in self._secret_bytes:
            data = data.replace(literal, b"<SECRET>")
        return _HF_TOKEN_BYTES.sub(b"<HF_TOKEN>", data)

    def encode(self, payload: JsonValue | str | bytes) -> bytes:
        """The bytes evidence may write for ``payload``: every write goes through here.

        ``bytes`` that decode as UTF-8 text are redacted as text; other bytes as binary;
        ``str`` as text; anything else as a JSON document.
        """
        if isinstance(payload, bytes):
            text = _as_text(payload)
            return self.binary(payload) if text is None else self.text(text).encode()
        if isinstance(payload, str):
            return self.text(payload).encode()
        return self.json_bytes(payload)

    def json_bytes(self, value: object) -> bytes:
        """The evidence-file form of a JSON document (a bare string included)."""
        return pretty_json(self.value(value)).encode()


def _unique_key(key: str, taken: Mapping[str, object]) -> str:
    """Two keys can redact to the same text; keep both instead of losing one."""
    if key not in taken:
        return key
    counter = 2
    while f"{key}#{counter}" in taken:
        counter += 1
    return f"{key}#{counter}"


def _as_text(data: bytes) -> str | None:
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_text(data: bytes) -> bool:
    return _as_text(data) is not None


def _split_protected(text: str) -> list[tuple[str, bool]]:
    pieces: list[tuple[str, bool]] = []
    position = 0
    for span in _PROTECTED.finditer(text):
        pieces.append((text[position : span.start()], False))
        pieces.append((span.group(0), True))
        position = span.end()
    pieces.append((text[position:], False))
    return pieces


def _flag_letters(pattern: re.Pattern[str]) -> str:
    return "".join(
        letter
        for flag, letter in ((re.IGNORECASE, "i"), (re.ASCII, "a"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
        if pattern.flags & flag
    )


def build_redactor(
    rootdir: Path | None,
    extra_patterns: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    identity: LocalIdentity | None = None,
) -> Redactor:
    """The redactor for this machine: repo paths become repo-relative, the rest placeholders."""
    env = os.environ if environ is None else environ
    who = LocalIdentity.probe(env) if identity is None else identity
    secrets = secret_env_values(env)
    rules: list[RedactionRule] = [
        RedactionRule("extra", pattern, "<REDACTED>") for pattern in compile_extra_patterns(extra_patterns)
    ]
    rules += [RedactionRule("env-secret", re.compile(re.escape(value)), "<SECRET>") for value in secrets]
    rules += [
        RedactionRule("hf-token", _HF_TOKEN, "<HF_TOKEN>"),
        RedactionRule("api-key", _API_KEY, "<SECRET>"),
        RedactionRule("bearer", _BEARER, "<TOKEN>", group=1),
        RedactionRule("email", _EMAIL, "<EMAIL>"),
    ]
    for root in _root_spellings(rootdir):
        rules += _directory_rules(root, inside="", itself=".", name="rootdir")
    rules.append(RedactionRule("path", _SENSITIVE_PATH, "<PATH>"))
    for home in who.home_dirs:
        if home != "/":
            rules += _directory_rules(home, inside="<HOME>/", itself="<HOME>", name="home")
    rules += [
        RedactionRule("ipv4", _IPV4_CANDIDATE, "<IP>", accept=_is_public_ip),
        RedactionRule("ipv6", _IPV6_CANDIDATE, "<IP>", accept=_is_public_ipv6),
    ]
    rules += [RedactionRule("host", _bounded_literal(host), "<HOST>") for host in who.host_names]
    rules += [RedactionRule("user", _bounded_literal(user), "<USER>") for user in who.user_names]
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
