from __future__ import annotations

import base64
import gzip
import hashlib
import ipaddress
import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.evidence import LocalIdentity, Redactor, build_redactor
from pytest_specgate.evidence._payloads import RefusedPayload, is_mostly_text, text_form
from pytest_specgate.evidence._redact import _IPV6_CANDIDATE, SENSITIVE_PATH_ROOTS, _unescaped, is_text

ENV = {
    "HF_TOKEN": "tok3nValue-9Q",
    "HUGGING_FACE_HUB_TOKEN": "hubsecret_77x",
    "OPENAI_API_KEY": "opensesame-4242",
    "GITHUB_TOKEN": "ghp_fakeGithubToken42",
    "PATH": "/usr/bin:/bin",
    "SHORT_TOKEN": "abc",
    "Hub_Token": "mixedCaseHubValue7",
    "AWS_ACCESS_KEY_ID": "AKIAENVIRONMENTKEY77",
    "GH_PAT": "gh-pat-from-env-4711",
    "JWT": "opaque.jwt-from-env.0815",
    "SLACK_WEBHOOK_URL": "https://chat.example/hooks/env-9999",
    "DEPLOY_KEY": "1",
}
IDENTITY = LocalIdentity(
    user_names=("alice-ops",),
    host_names=("buildbox-7.corp.example", "buildbox-7"),
    home_dirs=("/home/alice-ops", "/work/homes/alice-ops"),
)
ROOTDIR = Path("/srv/checkouts/specgate")
EXTRA = ["ACME-[0-9]{6}"]
REDACTOR = build_redactor(ROOTDIR, EXTRA, ENV, IDENTITY)


def unmemoised() -> Redactor:
    """REDACTOR's rules with an empty memo: it memoises each result as its own redaction, so
    only a fresh one shows that a result really is a fixed point of the rule pass."""
    return replace(REDACTOR)
EXAMPLES = max(settings().max_examples, 1000)
"""Three property tests x 1,000 = 3,000 examples per normal run; HYPOTHESIS_PROFILE=soak raises it."""


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


@pytest.mark.parametrize(
    "blob",
    [bytes(range(256)) + ENV["HF_TOKEN"].encode(), bytes(range(256)) + b"\x01hf_" + b"Z" * 40 + b"\xfe\x80"],
    ids=["known-value", "token-format"],
)
def test_a_binary_payload_holding_a_secret_is_refused_never_rewritten(blob: bytes) -> None:
    reason = r"binary content \(\d+ bytes, not text\) holds what reads as a credential"
    with pytest.raises(RefusedPayload, match=reason):
        REDACTOR.encode(blob)


def test_a_binary_payload_without_a_credential_keeps_every_byte() -> None:
    blob = bytes(range(256)) + b"\x012001:db8::42 10.1.2.3 /home/alice \xfe\x80"
    assert REDACTOR.encode(blob) == blob and not is_text(blob)


def test_invalid_extra_pattern_is_an_input_error_naming_it() -> None:
    with pytest.raises(
        SpecgateInputError, match=r"\[tool.specgate.redact\]: pattern '\(unclosed' is not a valid"
    ):
        build_redactor(ROOTDIR, ["(unclosed"], ENV, IDENTITY)


def test_invalid_extra_pattern_in_pyproject_stops_the_run_naming_the_file(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.specgate.redact]\npatterns = ["ok", "(unclosed"]\n')
    pytester.makepyfile("def test_a():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *pyproject.toml: [[]tool.specgate.redact[]]: "
                                 "pattern '(unclosed' is not a valid regular expression: *"])


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


_B64URL = _ALNUM + "_-"
_HEX = "0123456789abcdef"
_BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def _fixed(alphabet: str, size: int) -> st.SearchStrategy[str]:
    """``size`` random characters of ``alphabet``, as a token generator draws them: shrinking
    toward ``AAAA…`` would make tokens no scanner calls secret (and a tail cut by a line break
    without a digit, which the redactor leaves, see ``_HAS_DIGIT``)."""
    return st.integers(0, 2**64).map(lambda seed: "".join(random.Random(seed).choices(alphabet, k=size)))


_CATALOGUE_TOKENS: st.SearchStrategy[str] = st.one_of(
    st.tuples(st.sampled_from(["AKIA", "ASIA", "ABIA", "ACCA"]), _fixed(_BASE32, 16)).map("".join),
    st.tuples(st.sampled_from(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]), _fixed(_ALNUM, 36)).map("".join),
    _fixed(_ALNUM + "_", 82).map(lambda body: "github_pat_" + body),
    st.tuples(st.from_regex(r"[0-9]{10,13}-[0-9]{10,13}", fullmatch=True), _fixed(_ALNUM, 24)).map(
        lambda parts: f"xoxb-{parts[0]}-{parts[1]}"
    ),
    st.tuples(st.text(_B64URL, min_size=17, max_size=40), st.text(_B64URL, min_size=17, max_size=80),
              _fixed(_B64URL, 43)).map(lambda parts: f"eyJ{parts[0]}.eyJ{parts[1]}.{parts[2]}"),
    _fixed(_ALNUM + "_-", 35).map(lambda body: "AIza" + body),
)
"""Tokens in the formats gitleaks' rule files state (aws-access-token, github-pat and its
siblings, github-fine-grained-pat, slack-bot-token, jwt, gcp-api-key), built from those
formats, not from the redactor's patterns."""


_RANDOM_HEX = st.integers(0, 2**64).map(lambda seed: hashlib.sha1(str(seed).encode()).hexdigest())
"""A hex-encoded random token (detect-secrets' HexHighEntropyString): random, unlike the
``000…`` that shrinking favours, which is no secret in any scanner's eyes."""


def _split(token: str, at: int) -> tuple[str, str]:
    """``token`` cut by a line break at ``at``, after its prefix (the longest, ``github_pat_``, has
    11 characters; a break inside a prefix is not recognised); the part after the break must not
    survive. A token whose first line is already long enough to be whole goes on only into a
    tail that reads as random (a digit, or a capital after a small letter: ``RANDOM_TAIL``, the
    documented limit), so the tail here starts with a digit."""
    cut = min(max(at, 12), len(token) - 6)
    head, tail = token[:cut], token[cut:]
    if not any(c.isdigit() for c in tail):
        tail = "7" + tail[1:]
    return f"{head}\n{tail}", tail


def _pem(lines: list[str]) -> tuple[str, str]:
    body = "\n".join(lines)
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----", lines[0]


_NEW_FORMATS: st.SearchStrategy[tuple[str, str]] = st.one_of(
    _CATALOGUE_TOKENS.map(lambda token: (token, token)),
    st.tuples(_CATALOGUE_TOKENS, st.integers(0, 80)).map(lambda parts: _split(*parts)),
    st.lists(_fixed(_ALNUM + "+/", 64), min_size=1, max_size=3).map(_pem),
    st.tuples(_fixed("TABCDEFGH0123456789", 9), _fixed(_ALNUM, 24)).map(
        lambda parts: (f"https://hooks.slack.com/services/{parts[0]}/B0DD08H5G/{parts[1]}", parts[1])
    ),
    _fixed(_HEX, 64).map(
        lambda sig: (f"https://s3.example.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={sig}", sig)
    ),
    _fixed(_ALNUM, 35).map(lambda body: (f"https://maps.example.com/api?key=AIza{body}&zoom=3", body)),
    _CATALOGUE_TOKENS.map(lambda token: (encoded := base64.b64encode(token.encode()).decode(), encoded)),
    _CATALOGUE_TOKENS.map(lambda token: (encoded := token.encode().hex(), encoded)),
    st.tuples(st.sampled_from(["session_key", "client_secret_b64", "X-Api-Key", "signatureHex"]),
              _RANDOM_HEX).map(lambda parts: (f'"{parts[0]}": "{parts[1]}"', parts[1])),
    st.tuples(st.sampled_from(["GH_PAT", "JWT", "SLACK_WEBHOOK_URL", "AWS_ACCESS_KEY_ID", "MY_CREDENTIALS"]),
              st.text(_ALNUM + "-", min_size=8, max_size=20)).map(
        lambda parts: (f"{parts[0]}={parts[1]}", parts[1])
    ),
    st.from_regex(r"ip-(10|172|192)-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}", fullmatch=True).map(
        lambda host: (f"{host}.ec2.internal", host)
    ),
    st.sampled_from(["AKIAENVIRONMENTKEY77", "gh-pat-from-env-4711", "opaque.jwt-from-env.0815",
                     "https://chat.example/hooks/env-9999"]).map(lambda value: (value, value)),
)
"""The formats the catalogue added (issue #22): each planted in the form it is published in,
with the part that must not survive."""

_SECRETS: st.SearchStrategy[tuple[str, str]] = st.one_of(
    st.text(_ALNUM, min_size=30, max_size=40).map(lambda tail: ("hf_" + tail, "hf_" + tail)),
    st.sampled_from(
        ["tok3nValue-9Q", "hubsecret_77x", "opensesame-4242", "ghp_fakeGithubToken42", "mixedCaseHubValue7"]
    ).map(lambda value: (value, value)),
    st.tuples(st.from_regex(r"[a-z]{1,8}", fullmatch=True), st.text(_ALNUM, min_size=6, max_size=16)).map(
        lambda parts: (f"https://{parts[0]}:{parts[1]}@git.example.com/r.git", parts[1])
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
    _NEW_FORMATS,
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
    """The planted cores still in ``value`` (bounded names only as whole words)."""
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
    assert unmemoised().value(document) == document


@settings(max_examples=EXAMPLES)
@given(st.lists(st.one_of(st.text(max_size=16), _SECRETS.map(lambda s: s[0])), max_size=5).map("".join))
def test_redaction_is_idempotent_and_total_on_any_text(text: str) -> None:
    once = REDACTOR.text(text)
    assert unmemoised().text(once) == once
    encoded = REDACTOR.encode(text.encode("utf-8", "surrogatepass"))
    if is_text(encoded):
        assert encoded.decode() == once
    assert REDACTOR.encode(encoded) == encoded


def test_a_redacted_text_met_again_costs_a_lookup_and_other_text_the_full_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    redactor = unmemoised()
    secret = ENV["OPENAI_API_KEY"]
    nodeid = f"tests/test_x.py::test_token[{secret}]"
    once = redactor.text(nodeid)
    assert secret not in once
    passes: list[str] = []
    full_pass = Redactor._text
    monkeypatch.setattr(Redactor, "_text", lambda self, text: passes.append(text) or full_pass(self, text))
    assert (redactor.text(nodeid), redactor.text(once)) == (once, once)
    assert passes == []
    assert secret not in redactor.text(f"other {secret}") and passes == [f"other {secret}"]


_ESCAPES = {"_": "\\u005f", "@": "\\u0040", "/": "\\/", ".": "\\u002e", ":": "\\u003a"}
_PERCENT = {"_": "%5F", "@": "%40", "/": "%2F", ".": "%2E", ":": "%3A"}
CHANNELS = (
    "json-escaped", "percent-encoded", "utf-16", "utf-16-le", "utf-16-in-binary", "gzip", "nul-and-bad-bytes",
)
"""How a planted text reaches the redactor in the encoded soak (plain text is the tree soak)."""
_BINARY_HEAD = b"\x89PNG\r\n\x1a\n"


def _escaped(text: str, table: Mapping[str, str]) -> str:
    return "".join(table.get(character, character) for character in text)


def encode_for(channel: str, text: str) -> str | bytes:
    """``text`` as ``channel`` delivers it."""
    if channel == "json-escaped":
        return _escaped(text, _ESCAPES)
    if channel == "percent-encoded":
        return _escaped(text, _PERCENT)
    if channel == "gzip":
        return gzip.compress(text.encode())
    if channel == "nul-and-bad-bytes":
        return b"\x00" + text.encode() + b"\xff\xfe"
    if channel == "utf-16-in-binary":
        return _BINARY_HEAD + text.encode("utf-16-le") + b"\x00"
    return text.encode(channel)


def decoded_output(channel: str, output: bytes) -> str:
    """What a reader of ``output`` sees, escapes decoded (a secret may not hide behind them)."""
    if channel == "gzip":
        return gzip.decompress(output).decode()
    if channel in ("utf-16", "utf-16-le"):
        return output.decode(channel)
    if channel == "utf-16-in-binary":
        return output[len(_BINARY_HEAD) : -1].decode("utf-16-le", "replace")
    return _unescaped(output.decode("utf-8", "replace"))


encoded_plantings = st.tuples(st.sampled_from(CHANNELS), _planted_text())


def encoded_survivors(channel: str, planted: _Planted) -> list[str]:
    """The planted cores a reader finds; binary bytes must come back untouched or be refused, and
    may keep only what is no credential (names and addresses in a picture are left alone)."""
    payload = encode_for(channel, planted.text)
    try:
        output = REDACTOR.encode(payload)
    except RefusedPayload:
        return []
    binary = channel != "gzip" and isinstance(payload, bytes)
    if binary and text_form(payload) is None and not is_mostly_text(payload):
        assert output == payload
        as_text = REDACTOR.secrets_only().text(planted.text)
        return [core for core in planted.cores if not _survivors(as_text, [core])]
    return _survivors(decoded_output(channel, output), list(planted.cores))


@settings(max_examples=EXAMPLES)
@given(encoded_plantings)
def test_no_planted_secret_survives_any_encoding_of_it(planting: tuple[str, _Planted]) -> None:
    channel, planted = planting
    assert encoded_survivors(channel, planted) == []


def test_redactor_is_a_frozen_value() -> None:
    assert isinstance(REDACTOR, Redactor)
    with pytest.raises(AttributeError):
        REDACTOR.rules = ()  # type: ignore[misc]


@pytest.mark.parametrize(
    "text",
    ["tests/test_x.py::TestClass::test_dead", "a.py::test_ab[1]", "10:20:30", "2026-12-03T10:00:01Z"],
)
def test_node_ids_and_times_are_no_ipv6_candidates(text: str) -> None:
    assert re.search(_IPV6_CANDIDATE, text) is None


@pytest.mark.parametrize(
    ("text", "address"),
    [("addr 2001:db8::42, x", "2001:db8::42"), ("[2606:4700:4700::1111]:53", "2606:4700:4700::1111"),
     ("2001:0db8:0000:0000:0000:ff00:0042:8329", "2001:0db8:0000:0000:0000:ff00:0042:8329"),
     ("fe80::1%eth0", "fe80::1"), ("2001:db8::1é", "2001:db8::1")],
)
def test_addresses_stay_ipv6_candidates(text: str, address: str) -> None:
    found = re.search(_IPV6_CANDIDATE, text)
    assert found is not None and found.group(0) == address


# --- bypasses: escapes, encodings, containers, contexts ---------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail alice\\u0040example.org end", "mail <EMAIL> end"),
        ('{"email": "bob\\u0040corp.example", "ok": 1}', '{"email": "<EMAIL>", "ok": 1}'),
        ("tok hf\\u005f" + "a" * 34, "tok <HF_TOKEN>"),
        ("tok hf\\x5f" + "a" * 34, "tok <HF_TOKEN>"),
        ("url-encoded user%40example.org", "url-encoded <EMAIL>"),
        ("twice hf%255F" + "b" * 34, "twice <HF_TOKEN>"),
        ("Authorization: Bearer%20abcdefghijk", "Authorization: Bearer <TOKEN>"),
        ("escaped \\/home\\/alice\\/models", "escaped \\<PATH>"),
        ("clone https://bob:hunter22@git.example.com/x.git", "clone https://<SECRET>@git.example.com/x.git"),
        ("push https://ghp_abcdef1234@github.com/o/r", "push https://<SECRET>@github.com/o/r"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic <TOKEN>"),
        ('password=hunter22 and "api_key": "k-123456"', 'password=<SECRET> and "api_key": "<SECRET>"'),
        ("model /Users/Jane Q Doe/models/x.bin loaded", "model <PATH> loaded"),
        ("C:\\Users\\jane\\AppData\\Local\\x; c:/users/jane/x", "<PATH>; <PATH>"),
        ("/srv/other /Volumes/USB/x /builds/group/proj", "<PATH> <PATH> <PATH>"),
        ("from 10.1.2.3. Then", "from <IP>. Then"),
    ],
)
def test_escaped_encoded_and_contextual_secrets_are_replaced(text: str, expected: str) -> None:
    assert REDACTOR.text(text) == expected
    assert REDACTOR.text(expected) == expected


def test_escapes_without_a_secret_behind_them_are_left_as_written() -> None:
    text = 'json {"path": "a\\/b", "pct": "100%25", "u": "caf\\u00e9"} 50%ab'
    assert REDACTOR.text(text) == text


def test_env_secrets_are_found_whatever_the_case_of_their_name() -> None:
    environ = {"hf_token": "lowercaseNamedValue", "Api_Key": "mixedCaseNamed99", "my_password": "pw-123456"}
    redactor = build_redactor(ROOTDIR, [], environ, IDENTITY)
    redacted = redactor.text("a lowercaseNamedValue b mixedCaseNamed99 c pw-123456")
    assert redacted == "a <SECRET> b <SECRET> c <SECRET>"


WORDY = LocalIdentity(user_names=("root", "test", "default"), host_names=("buildhost",), home_dirs=("/root",))
WORDY_REDACTOR = build_redactor(ROOTDIR, [], {}, WORDY)


@pytest.mark.parametrize(
    "text",
    [
        "root cause: the default mode of test_x failed",
        "tests/test_x.py::test_default[root] outcome passed mode default",
        "buildhost is only a word here",
        "relative/test/path and data/root/x",
    ],
)
def test_names_that_are_words_stay_words(text: str) -> None:
    assert WORDY_REDACTOR.text(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ssh root@buildhost", "ssh <USER>@<HOST>"),
        ("USER=test HOSTNAME=buildhost", "USER=<USER> HOSTNAME=<HOST>"),
        ('{"user": "default"}', '{"user": "<USER>"}'),
        ("see ~root/.ssh/config", "see ~<USER>/.ssh/config"),
        ("/tmp/pytest-of-test/pytest-3/x.py", "/tmp/pytest-of-<USER>/pytest-3/x.py"),
        ("/scratch/default/run and /mnt/x", "/scratch/<USER>/run and <PATH>"),
        ("http://buildhost:8000/v1 and //buildhost/share", "http://<HOST>:8000/v1 and //<HOST>/share"),
    ],
)
def test_names_that_are_words_are_replaced_where_they_identify(text: str, expected: str) -> None:
    assert WORDY_REDACTOR.text(text) == expected


def test_a_user_named_like_a_schema_word_leaves_the_record_valid(git_repo: Path) -> None:
    from evidence_testkit import AC10, SyntheticRun

    from pytest_specgate.evidence import read_records, verify_bundle
    from pytest_specgate.evidence._bundle import load_bundle

    environ = {"USER": "default", "LOGNAME": "passed", "HOME": "/home/default"}
    run = SyntheticRun(git_repo.path, environ, redact_patterns=["failed", "interrupted"])  # type: ignore[attr-defined]
    run.run_test("acceptance/test_ac10.py::test_default", AC10)
    run.run_test("acceptance/test_ac10.py::test_other", AC10, outcome="failed", message="failed: root cause")
    bundle = load_bundle(run.finish().path)
    assert verify_bundle(bundle) == []
    record = read_records(bundle)["AC-10"].document
    assert record["mode"] == "default" and record["outcome"] == "failed"
    assert [test["outcome"] for test in record["tests"]] == ["passed", "failed"]
    assert record["tests"][1]["message"] == "<REDACTED>: root cause"


def test_utf16_text_is_redacted_in_its_own_encoding() -> None:
    text = "mail alice@example.org token hf_" + "d" * 34 + " at /home/bob/x"
    for codec in ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"):
        encoded = REDACTOR.encode(text.encode(codec))
        assert encoded.decode(codec) == "mail <EMAIL> token <HF_TOKEN> at <PATH>", codec


def test_text_with_a_stray_nul_or_bad_byte_is_still_redacted() -> None:
    log = b"boot\x00 user alice@example.org from 10.1.2.3 \xff\xfe at /home/bob Bearer abcdefghij ACME-123456"
    expected = b"boot\x00 user <EMAIL> from <IP> \xff\xfe at <PATH> Bearer <TOKEN> <REDACTED>"
    assert REDACTOR.encode(log) == expected


@pytest.mark.parametrize("kind", ["gzip", "bzip2", "xz", "zip"])
def test_compressed_attachments_are_opened_redacted_and_rebuilt(kind: str) -> None:
    import bz2
    import gzip
    import io
    import lzma
    import zipfile

    inner = b"log alice@example.org at /home/bob " + ENV["HF_TOKEN"].encode()
    if kind == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("logs/alice@example.org", inner)
            archive.writestr("nested.gz", gzip.compress(inner))
        redacted = REDACTOR.encode(buffer.getvalue())
        with zipfile.ZipFile(io.BytesIO(redacted)) as archive:
            members = {info.filename: archive.read(info) for info in archive.infolist()}
        assert members == {
            "logs/<EMAIL>": b"log <EMAIL> at <PATH> <SECRET>",
            "nested.gz": gzip.compress(b"log <EMAIL> at <PATH> <SECRET>", mtime=0),
        }
    else:
        compress, decompress = {
            "gzip": (gzip.compress, gzip.decompress),
            "bzip2": (bz2.compress, bz2.decompress),
            "xz": (lzma.compress, lzma.decompress),
        }[kind]
        redacted = REDACTOR.encode(compress(inner))
        assert decompress(redacted) == b"log <EMAIL> at <PATH> <SECRET>"
    assert REDACTOR.encode(redacted) == redacted


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\x28\xb5\x2f\xfd" + b"\x00" * 16, "zstd-compressed content cannot be opened for redaction"),
        (b"\x1f\x8b\x08\x00garbage", "gzip content is damaged and cannot be opened"),
        (b"7z\xbc\xaf\x27\x1c" + b"\x00" * 16, "a 7-Zip archive content cannot be opened for redaction"),
    ],
)
def test_containers_that_cannot_be_opened_are_refused_with_the_reason(payload: bytes, reason: str) -> None:
    with pytest.raises(RefusedPayload, match=re.escape(reason)):
        REDACTOR.encode(payload)


def test_a_cut_comes_after_redaction_so_no_part_of_a_secret_survives() -> None:
    token = "hf_" + "S" * 40
    text = "x" * 1990 + token + " tail"
    assert token[:8] not in REDACTOR.text_within(text, 2000)
    assert REDACTOR.text_within(text, 2005) == "x" * 1990 + "<HF_TOKEN> tail"
    assert REDACTOR.text_within(text, 1995) == "x" * 1990 + "<HF_…"


def test_a_long_text_is_memoised_as_its_own_redaction_too() -> None:
    """A text past the short memo (a run-wide reason naming every foreign module) is redacted
    once per run; the memo must give the same answer as the full pass, for it and its result."""
    redactor = unmemoised()
    long_text = "modules from /home/alice-ops/lib/x.py and hf_" + "a1B2" * 9 + " " + "word " * 100
    first = redactor.text(long_text)
    assert first == unmemoised().text(long_text) and "<HF_TOKEN>" in first and "alice" not in first
    assert redactor.text(long_text) == first
    assert redactor.text(first) == first == unmemoised().text(first)


def test_documents_sharing_a_mapping_are_each_redacted_as_alone() -> None:
    shared = {"foreign": {"x": "/home/alice-ops/x.py"}, "token": "hf_" + "a1B2" * 9}
    documents = [{"ac": "AC-1", "run": shared}, {"ac": "AC-2", "run": shared, "more": [shared]}]
    together = REDACTOR.values(documents)
    assert together == [REDACTOR.value(document) for document in documents]
    assert together[0]["run"] == {"foreign": {"x": "<PATH>"}, "token": "<HF_TOKEN>"}


def test_markdown_by_lines_redacts_every_line() -> None:
    text = "## AC-1\n\n- Host: buildbox-7\n- token hf_" + "a1B2" * 9 + "\n" + "same line\n" * 3
    assert REDACTOR.by_lines(text) == "## AC-1\n\n- Host: <HOST>\n- token <HF_TOKEN>\n" + "same line\n" * 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("frame b'\\x00aB3dE9fG2hJ7kL4mN8pQ5rS'", "frame b'\\<SECRET>'"),
        ("frame \\u0000aB3dE9fG2hJ7kL4mN8pQ5rS", "frame \\<SECRET>"),
        ("eyJ00000000000000000%2EeyJ00000000000013456%2E2WAqGzYtEL6GsWNq6%5FZ5tU5REgBN69E3qZJaUz0QaF3",
         "<TOKEN>"),
    ],
)
def test_a_token_behind_an_escape_is_judged_whole(text: str, expected: str) -> None:
    """A run after an escape of a control character is judged (the escape stays as written, so
    no decoding reads it), and a run after a percent escape is left to the decoding, which reads
    the token whole (once, only a JWT's payload and signature went, its header survived)."""
    assert REDACTOR.text(text) == expected
