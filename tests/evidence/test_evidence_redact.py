from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_specgate.evidence import LocalIdentity, Redactor, build_redactor
from pytest_specgate.evidence._redact import _IPV6_CANDIDATE, SENSITIVE_PATH_ROOTS, is_text

ENV = {
    "HF_TOKEN": "tok3nValue-9Q",
    "HUGGING_FACE_HUB_TOKEN": "hubsecret_77x",
    "OPENAI_API_KEY": "opensesame-4242",
    "GITHUB_TOKEN": "ghp_fakeGithubToken42",
    "PATH": "/usr/bin:/bin",
    "SHORT_TOKEN": "abc",
}
IDENTITY = LocalIdentity(
    user_names=("alice-ops",),
    host_names=("buildbox-7.corp.example", "buildbox-7"),
    home_dirs=("/home/alice-ops", "/work/homes/alice-ops"),
)
ROOTDIR = Path("/srv/checkouts/specgate")
EXTRA = ["ACME-[0-9]{6}"]
REDACTOR = build_redactor(ROOTDIR, EXTRA, ENV, IDENTITY)
EXAMPLES = max(settings().max_examples, 1000)
"""Two property tests x 1,000 = 2,000 examples per normal run; HYPOTHESIS_PROFILE=soak raises it."""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("token hf_" + "a1B2" * 9, "token <HF_TOKEN>"),
        ("HF_TOKEN=tok3nValue-9Q end", "HF_TOKEN=<SECRET> end"),
        ("key opensesame-4242 hubsecret_77x", "key <SECRET> <SECRET>"),
        ("gh ghp_fakeGithubToken42", "gh <SECRET>"),
        ("Authorization: Bearer eyJhbGciOi.J9x-y_z", "Authorization: Bearer <TOKEN>"),
        ("openai sk-abcdefghijklmnopqrstuvwx", "openai <SECRET>"),
        ("mail alice@example.org now", "mail <EMAIL> now"),
        ("/srv/checkouts/specgate/tests/test_x.py:12", "tests/test_x.py:12"),
        ("cwd /srv/checkouts/specgate", "cwd ."),
        ("model at /Users/alice/models/qwen.safetensors", "model at <PATH>"),
        ("cache /var/folders/xy/T/tmp1 and /private/tmp", "cache <PATH> and <PATH>"),
        ("home /work/homes/alice-ops/.cache/hf", "home <HOME>/.cache/hf"),
        ("from 10.1.2.3 and 2001:db8::42, not 127.0.0.1 or ::1", "from <IP> and <IP>, not 127.0.0.1 or ::1"),
        ("ran by alice-ops on buildbox-7.corp.example (buildbox-7)", "ran by <USER> on <HOST> (<HOST>)"),
        ("ticket ACME-123456", "ticket <REDACTED>"),
    ],
)
def test_each_kind_of_secret_is_replaced(text: str, expected: str) -> None:
    assert REDACTOR.text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "tests/test_x.py::TestA::test_b[param-1]",
        "std::vector Foo::bar",
        "2026-12-02T13:23:08Z took 13:23:08",
        "sha256:" + "ab" * 32,
        "version 1.2.3 on python 3.11.9",
        "http://127.0.0.1:8000/v1 and http://localhost:8000",
        "the abc value and SHORT_TOKEN",
        "alice-opsx and xbuildbox-7x are different words",
        "relative/home/x and data.csv",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert REDACTOR.text(text) == text


def test_digest_lines_survive_a_greedy_extra_pattern() -> None:
    greedy = build_redactor(ROOTDIR, ["[0-9a-f]{16,}"], ENV, IDENTITY)
    line = f"specgate-evidence AC-10 ac-sha256={'a' * 64} bundle-sha256={'b' * 64}"
    assert greedy.text(line) == line
    assert greedy.value({"sha256": "c" * 64, "other": "c" * 64}) == {
        "sha256": "c" * 64,
        "other": "<REDACTED>",
    }


def test_keys_are_redacted_and_colliding_keys_are_both_kept() -> None:
    value = {"/home/a/x": 1, "/home/b/y": 2, "alice@example.org": {"nested hf_" + "x" * 31: [None, True]}}
    redacted = REDACTOR.value(value)
    assert redacted == {"<PATH>": 1, "<PATH>#2": 2, "<EMAIL>": {"nested <HF_TOKEN>": [None, True]}}
    assert REDACTOR.value(redacted) == redacted


def test_non_json_values_become_json() -> None:
    value = {"path": Path("/srv/checkouts/specgate/x.py"), "nan": float("nan"), "set": {3, 1}, "raw": b"ab"}
    assert REDACTOR.value(value) == {"nan": "nan", "path": "x.py", "raw": "<2 bytes>", "set": [1, 3]}


def test_binary_payloads_lose_credentials_only() -> None:
    blob = b"\x00\xff" + ENV["HF_TOKEN"].encode() + b"\x01hf_" + b"Z" * 40 + b"\x02/home/alice"
    encoded = REDACTOR.encode(blob)
    assert ENV["HF_TOKEN"].encode() not in encoded and b"hf_ZZZ" not in encoded
    assert encoded.startswith(b"\x00\xff<SECRET>\x01<HF_TOKEN>\x02")


def test_invalid_extra_pattern_is_a_usage_error_naming_it() -> None:
    with pytest.raises(
        pytest.UsageError, match=r"\[tool.specgate.redact\]: pattern '\(unclosed' is not a valid"
    ):
        build_redactor(ROOTDIR, ["(unclosed"], ENV, IDENTITY)


def test_probe_finds_this_process_identity() -> None:
    identity = LocalIdentity.probe({"USER": "someone-else", "HOME": "/home/someone-else"})
    assert "someone-else" in identity.user_names
    assert "/home/someone-else" in identity.home_dirs
    assert identity.host_names and "localhost" not in identity.host_names


# --- property tests -------------------------------------------------------------------------

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_FILLER = st.text(alphabet=" \t\n!?#*^~%&$ÄöüßéЖ中😀", max_size=12)
"""Filler shares no character with any secret, so a secret cannot appear in it by chance."""
_SEPARATOR = st.sampled_from([" ", "\n", "\t", '"', "'", "(", ")", ",", "=", ";", "[", "]", "é"])


def _ipv6_with_two_groups(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return not address.is_loopback and sum(1 for group in str(address).split(":") if group) >= 2


_SECRETS: st.SearchStrategy[tuple[str, str]] = st.one_of(
    st.text(_ALNUM, min_size=30, max_size=40).map(lambda tail: ("hf_" + tail, "hf_" + tail)),
    st.sampled_from(["tok3nValue-9Q", "hubsecret_77x", "opensesame-4242", "ghp_fakeGithubToken42"]).map(
        lambda value: (value, value)
    ),
    st.text(_ALNUM + "._~+/=-", min_size=8, max_size=24).map(lambda token: (f"Bearer {token}", token)),
    st.tuples(
        st.from_regex(r"[a-z0-9][a-z0-9._+-]{0,10}", fullmatch=True),
        st.lists(st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True), min_size=1, max_size=3),
        st.from_regex(r"[a-z]{2,6}", fullmatch=True),
    ).map(lambda parts: (email := f"{parts[0]}@{'.'.join(parts[1])}.{parts[2]}", email)),
    st.tuples(
        st.sampled_from(SENSITIVE_PATH_ROOTS),
        st.lists(st.from_regex(r"[A-Za-z0-9_-]{1,10}", fullmatch=True), max_size=4),
    ).map(lambda parts: (path := "/" + "/".join([parts[0], *parts[1]]), path)),
    st.from_regex(r"(/[a-z0-9_]{1,8}){1,3}", fullmatch=True).map(
        lambda tail: (f"/srv/checkouts/specgate{tail}", "/srv/checkouts/specgate")
    ),
    st.ip_addresses(v=4).filter(lambda a: not a.is_loopback).map(lambda a: (str(a), str(a))),
    st.ip_addresses(v=6).filter(_ipv6_with_two_groups).map(lambda a: (str(a), str(a))),
    st.sampled_from(["alice-ops", "ALICE-OPS", "buildbox-7", "buildbox-7.corp.example"]).map(
        lambda n: (n, n)
    ),
    st.from_regex(r"ACME-[0-9]{6}", fullmatch=True).map(lambda value: (value, value)),
)
_BOUNDED = {"alice-ops", "buildbox-7", "buildbox-7.corp.example"}


@dataclass(frozen=True)
class _Planted:
    """Text with secrets in it, and the part of each secret that must not survive."""

    text: str
    cores: tuple[str, ...]


@st.composite
def _planted_text(draw: st.DrawFn) -> _Planted:
    pieces, cores = [draw(_FILLER)], []
    for _ in range(draw(st.integers(0, 2))):
        planted, core = draw(_SECRETS)
        cores.append(core)
        pieces += [draw(_SEPARATOR), planted, draw(_SEPARATOR), draw(_FILLER)]
    return _Planted("".join(pieces), tuple(cores))


_PLANTED_TREE = st.recursive(
    st.one_of(_planted_text(), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none()),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(_planted_text(), children, max_size=3)
    ),
    max_leaves=6,
)


def _unwrap(tree: Any, cores: list[str]) -> Any:
    """The plain structure, collecting every planted core on the way."""
    if isinstance(tree, _Planted):
        cores.extend(tree.cores)
        return tree.text
    if isinstance(tree, list):
        return [_unwrap(item, cores) for item in tree]
    if isinstance(tree, dict):
        return {_unwrap(key, cores): _unwrap(value, cores) for key, value in tree.items()}
    return tree


def _with_cores(tree: Any) -> tuple[Any, list[str]]:
    cores: list[str] = []
    return _unwrap(tree, cores), cores


_planted_structure = _PLANTED_TREE.map(_with_cores)


def _strings(value: Any) -> list[str]:
    """Every key and string value: numbers may spell digits of a secret by chance."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in [key, *_strings(item)]]
    return []


def _survivors(value: Any, cores: list[str]) -> list[str]:
    output = "\x00".join(_strings(value))
    found = []
    for core in cores:
        if core.lower() in _BOUNDED:
            if re.search(r"(?<![A-Za-z0-9])" + re.escape(core) + r"(?![A-Za-z0-9])", output, re.IGNORECASE):
                found.append(core)
        elif core in output:
            found.append(core)
    return found


@settings(max_examples=EXAMPLES)
@given(_planted_structure)
def test_no_planted_secret_survives_in_keys_or_values_and_redaction_is_idempotent(
    planted: tuple[Any, list[str]],
) -> None:
    structure, cores = planted
    document = json.loads(REDACTOR.json_bytes(structure))
    assert _survivors(document, cores) == []
    assert document == REDACTOR.value(structure)
    assert REDACTOR.value(document) == document


@settings(max_examples=EXAMPLES)
@given(st.lists(st.one_of(st.text(max_size=16), _SECRETS.map(lambda s: s[0])), max_size=5).map("".join))
def test_redaction_is_idempotent_and_total_on_any_text(text: str) -> None:
    once = REDACTOR.text(text)
    assert REDACTOR.text(once) == once
    encoded = REDACTOR.encode(text.encode("utf-8", "surrogatepass"))
    if is_text(encoded):
        assert encoded.decode() == once
    assert REDACTOR.encode(encoded) == encoded


def test_redactor_is_a_frozen_value() -> None:
    assert isinstance(REDACTOR, Redactor)
    with pytest.raises(AttributeError):
        REDACTOR.rules = ()  # type: ignore[misc]


@pytest.mark.parametrize(
    "text",
    ["tests/test_x.py::TestClass::test_dead", "a.py::test_ab[1]", "10:20:30", "2026-12-03T10:00:01Z"],
)
def test_node_ids_and_times_are_no_ipv6_candidates(text: str) -> None:
    assert _IPV6_CANDIDATE.search(text) is None


@pytest.mark.parametrize(
    ("text", "address"),
    [("addr 2001:db8::42, x", "2001:db8::42"), ("[2606:4700:4700::1111]:53", "2606:4700:4700::1111"),
     ("2001:0db8:0000:0000:0000:ff00:0042:8329", "2001:0db8:0000:0000:0000:ff00:0042:8329"),
     ("fe80::1%eth0", "fe80::1"), ("2001:db8::1é", "2001:db8::1")],
)
def test_addresses_stay_ipv6_candidates(text: str, address: str) -> None:
    found = _IPV6_CANDIDATE.search(text)
    assert found is not None and found.group(0) == address
