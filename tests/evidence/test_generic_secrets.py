"""Secrets found without a vendor's prefix, secrets known by value, and specgate's own output.

The corpus (vendor_formats.py) holds 130 token shapes vendors document that the catalogue does
not name; the generic detector must find them by shape or by the word before them, while the
allowlist keeps every identifier evidence must show.
"""

from __future__ import annotations

import base64
import io
import json
import random
import string
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote

import pytest
from evidence_testkit import every_byte_written, git
from vendor_formats import CONTEXT_FORMS, FORMATS, corpus

from pytest_specgate.evidence import LocalIdentity, build_redactor
from pytest_specgate.evidence._generic_secrets import allowed_identifier, looks_generated
from pytest_specgate.evidence._known_secrets import (
    encoded_forms,
    github_mask_commands,
    known_secret_values,
    netrc_passwords,
)
from pytest_specgate.evidence._redact import token_rules
from pytest_specgate.evidence._redacted_output import RedactedLines

IDENTITY = LocalIdentity(
    user_names=("alice-ops",), host_names=("buildbox-7",), home_dirs=("/home/alice-ops",)
)
REDACTOR = build_redactor(Path("/srv/checkouts/specgate"), [], {}, IDENTITY)
RULE_FILE = Path(__file__).resolve().parents[2] / "pytest_specgate" / "evidence" / "_secret_rules.py"
PLANTED = corpus()


def leaked(output: str, cores: tuple[str, ...] | list[str]) -> list[str]:
    return [core for core in cores if core in output or json.dumps(core)[1:-1] in output]


# --- the independent corpus ------------------------------------------------------------------


def test_the_corpus_has_over_a_hundred_formats_the_catalogue_does_not_name() -> None:
    assert len(FORMATS) >= 100 and len({f.vendor for f in FORMATS}) == len(FORMATS)
    named = [
        (planted.vendor.vendor, rule.name)
        for planted in PLANTED
        for rule in token_rules()
        if rule.pattern.search(planted.token)
    ]
    assert named == []


@pytest.mark.parametrize("form", CONTEXT_FORMS)
def test_no_corpus_format_survives_in_any_form(form: str) -> None:
    survivors = [
        (planted.vendor.vendor, REDACTOR.text(form.format(token=planted.token)))
        for planted in PLANTED
        if leaked(REDACTOR.text(form.format(token=planted.token)), planted.cores)
    ]
    assert survivors == []


def _fresh_token(rng: random.Random) -> tuple[str, str]:
    prefix = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 6))) + rng.choice("_-")
    alphabet = rng.choice([
        string.ascii_letters + string.digits,
        string.ascii_lowercase + string.digits,
        string.ascii_uppercase + string.digits,
        string.ascii_letters + string.digits + "-_",
    ])
    body = "".join(rng.choices(alphabet, k=rng.randint(24, 64)))
    return prefix, body


def test_random_vendor_like_tokens_with_fresh_prefixes_are_redacted() -> None:
    """Prefixes no rule names (checked), bodies of every common alphabet: the generic detector."""
    rng = random.Random(20261204)
    rules = RULE_FILE.read_text()
    missed = []
    tried = 0
    while tried < 500:
        prefix, body = _fresh_token(rng)
        if prefix in rules:
            continue
        tried += 1
        token = prefix + body
        for form in (token, f"value {token} end", f"'{token}'", f"{{\"id\": \"{token}\"}}"):
            if body in REDACTOR.text(form):
                missed.append(form)
    assert missed == []


@pytest.mark.parametrize(
    "text",
    [
        "commit 4b3db9d0e5c8a9f1b2c3d4e5f60718293a4b5c6d and sha256 "
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "uuid 123e4567-e89b-12d3-a456-426614174000 request chatcmpl-0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "run 20261204T112233Z-a1b2c3 merged-0123456789ab",
        "tests/evidence/test_generic_secrets.py::test_random_vendor_like_tokens_with_fresh_prefixes_are_redacted",
        "model Qwen/Qwen2.5-0.5B-Instruct draft mlx-community/Llama-3.2-1B-Instruct-4bit "
        "and meta-llama/Meta-Llama-3-8B-Instruct",
        "path pytest_specgate/evidence/_generic_secrets.py and attachments/83cfd6fbacb55b9a-server.log",
        "vllm 0.11.0+cu128 torch 2.8.0.dev20250601+cpu mlx-lm 0.28.1 v1.2.3-rc.4",
        "key SHA256:7OiVQrYLXnGWvSb96n6g+HD9VPS1SuyNdAd2g51AsJQ "
        "integrity sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K",
        "TestGenericDetectorRedactsFreshPrefixes test_a_token_split_by_a_line_break_is_one_secret",
        "sorted(items, key=lambda item: item.name) token: str = None password=None",
        "bundle-sha256 2ebaf1cad1cf… and a message cut here...",
        "_trace=<pluggy._tracing.TagTrace...7f9f0a5af6b0>, at 0x7f9f0a5af6b0",
        # A vLLM server's log: a model path before a log line's "...", a uuid4-named temp dir.
        "Starting to load model /tmp/fp-tiny/tiny-llama-ad3ef2f7643d01c4/target...",
        "distributed_init_method=file:///tmp/vllm_dist_6862644b625d4a3891eacf07b36a53ec backend=gloo",
        # pip's log names a built wheel's digest as name=hex.
        "filename=pytest_specgate-0.1.0-py3-none-any.whl size=6164 "
        "sha256=4f68f620c473289b5f94c928e26b86fb7b997a70e8760e56ffb0b0801ae8f745",
    ],
)
def test_the_allowlist_keeps_what_evidence_must_show(text: str) -> None:
    assert REDACTOR.text(text) == text


@pytest.mark.parametrize(
    ("run", "entry"),
    [
        ("4b3db9d0e5c8a9f1b2c3d4e5f60718293a4b5c6d", "commit or digest"),
        ("123e4567-e89b-12d3-a456-426614174000", "uuid"),
        ("20261204T112233Z-a1b2c3", "run id"),
        ("chatcmpl-0f1e2d3c4b5a69788796a5b4c3d2e1f0", "request id"),
        ("pat-na1-123e4567-e89b-12d3-a456-426614174000", None),
        ("sbp_4b3db9d0e5c8a9f1b2c3d4e5f60718293a4b5c6d", None),
    ],
)
def test_allowlist_entries_are_named_and_a_vendor_prefix_is_not_an_id(run: str, entry: str | None) -> None:
    assert allowed_identifier(run) == entry
    assert looks_generated(run) is (entry is None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter22", "password=<SECRET>"),
        ("password: \"Pa55\rword\"", "password: \"<SECRET>\""),
        ("DB_PASSWORD: 'correct horse battery staple'", "DB_PASSWORD: '<SECRET>'"),
        ("Api-Key = \"x9Fq2LmZ8\"", "Api-Key = \"<SECRET>\""),
        ("{\"apiKey\": \"abc\"}", "{\"apiKey\": \"<SECRET>\"}"),
        ("x-auth-token: plainvalue", "x-auth-token: <SECRET>"),
        ("LOGIN=alice.smith", "LOGIN=<SECRET>"),
        ("session_secret => 'rosebud'", "session_secret => '<SECRET>'"),
        ("machine api.example.com login bob password s3cr3t!",
         "machine api.example.com login <SECRET> password <SECRET>"),
        ("machine h\n  login bob\n  password s3cr3t!", "machine h\n  login <SECRET>\n  password <SECRET>"),
        ("machine h\r\n  login bob\r\n  password s3cr3t!\r\n",
         "machine h\r\n  login <SECRET>\r\n  password <SECRET>\r\n"),
        ("default\rlogin bob\rpasswd s3cr3t!\r", "default\rlogin <SECRET>\rpasswd <SECRET>\r"),
        ("x\rmachine h login bob password s3cr3t!\r\n", "x\rmachine h login <SECRET> password <SECRET>\r\n"),
        ("run --hf-token tok123value --port 8000", "run --hf-token <SECRET> --port 8000"),
        ("curl -u admin:Pa55w0rd https://x", "curl -u admin:<SECRET> https://x"),
        ("auth=a1b2c3d4e5f6", "auth=<SECRET>"),
        ("keyword: a1b2c3d4e5f6 monkey=banana bypass=1 key=lambda",
         "keyword: a1b2c3d4e5f6 monkey=banana bypass=1 key=lambda"),
        ("token: str, password=None, secret=self.secret", "token: str, password=None, secret=self.secret"),
        ("key=foo:password=s3cr3t!", "key=foo:password=<SECRET>"),
        ("auth=basic/secret=s3cr3t! sig=x|token=s3cr3t!", "auth=basic/secret=<SECRET> sig=x|token=<SECRET>"),
        ("sig='x password: 'hunter2 hunter2'", "sig='x password: '<SECRET>'"),
    ],
)
def test_values_after_credential_words_in_any_case_or_separator(text: str, expected: str) -> None:
    assert REDACTOR.text(text) == expected
    assert REDACTOR.text(expected) == expected


# --- decoded before matching ------------------------------------------------------------------

TOKEN = "zq_Xb7Kp2Lm9Nv4Rt6Ws8Yd3Fh5Jg1"


@pytest.mark.parametrize(
    "text",
    [
        f"'{TOKEN[:14]}\\n{TOKEN[14:]}'",
        "b'" + "".join(f"\\x{ord(c):02x}" for c in TOKEN) + "'",
        "'" + "".join(f"\\u{ord(c):04x}" for c in TOKEN) + "'",
        quote(TOKEN, safe="") .replace("_", "%5F"),
        f"'{TOKEN[:12]}...'",
        f"'...{TOKEN[-12:]}'",
        f"value {TOKEN[:10]}…",
    ],
)
def test_escaped_percent_encoded_and_cut_tokens_are_found(text: str) -> None:
    redacted = REDACTOR.text(text)
    assert not any(TOKEN[i : i + 8] in redacted for i in range(len(TOKEN) - 8)), redacted


TAIL = "tU5REgBN69E3qZJ"


@pytest.mark.parametrize(
    "text",
    [
        f" AIzabyAmg5GnM0bbjUkTRIo\\u005f\n{TAIL} ",
        f" AIzabyAmg5GnM0bbjUkTRIo%5F\n{TAIL} ",
        f" AIzah4cp-AhkpVg6y\\u005f6sqEgP\n{TAIL} ",
        f" AIzaY85bQ6XDWsZA\\u005fbLiX\\u005fF1\r\n    {TAIL} ",
        f" AIzabyAmg5GnM0bbjUkTRIo_\\n{TAIL} ",
        f" AIzabyAmg5GnM0bbjUkTRIo_%0A{TAIL} ",
    ],
)
def test_the_rest_of_a_token_after_a_break_its_replaced_first_part_left_is_found(text: str) -> None:
    """A token's first part long enough to be replaced alone (before an escaped character between
    the two was decoded, or before an escaped break could join them) leaves its rest on the far
    side of the break: the soak's json-escaped and percent-encoded GCP key cut by a line break."""
    assert TAIL not in REDACTOR.text(text)


@pytest.mark.parametrize(
    "text",
    [
        "hf_password\napi\\u005fkey=hunter2hunter2",
        "hf_password\napi%5Fkey=hunter2hunter2",
        "hf_password\n  api\\x5fkey%3Dhunter2hunter2",
        "ghp_x\ndb\\u005fpassword\\u003ahunter2hunter2",
    ],
)
def test_a_key_whose_underscore_or_assignment_is_escaped_is_no_token_tail(text: str) -> None:
    """A vendor prefix ending one line does not take the next line's key as the rest of its token
    when the key's ``_`` (or its ``=``, ``:``) is escaped: the decoding step reads that key, and its
    value, which went out whole when the token took the key's first word."""
    assert "hunter2" not in REDACTOR.text(text)


def test_a_token_tail_on_the_next_line_is_still_taken_before_an_escape() -> None:
    assert REDACTOR.text("hf_aBcDeFgHiJkLmN\nOpQrStUvWxYz0123456789") == "<HF_TOKEN>"
    assert REDACTOR.text("hf_aBcDeFgHiJkLmN\nop_qr%5Fst").startswith("<HF_TOKEN>")


@pytest.mark.parametrize(
    "text",
    [
        "&token='\u2028Api-Key: 'Pa55 word'",
        "&token=' Api-Key: 'Pa55 word'",
        'secret=" password: "Pa55 word"',
        "auth_token=`x DB_PASSWORD=`Pa55 word` y",
    ],
)
def test_a_stray_quote_does_not_pair_with_the_next_keys_opening_quote(text: str) -> None:
    """A quoted value that a key and its assignment end was closed by the next value's opening
    quote: that value, after it, went out whole."""
    assert "Pa55" not in REDACTOR.text(text)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('{"password": "my token", "note": "keep me"}', "keep me"),
        ('password: "abc" and "keep me"', "keep me"),
        ('password: "abc token: " end', " end"),
        ("token='a' then name: 'keep me'", "keep me"),
    ],
)
def test_a_quoted_value_ends_at_its_own_quote_when_no_key_ends_it(text: str, kept: str) -> None:
    redacted = REDACTOR.text(text)
    assert kept in redacted and "<SECRET>" in redacted, redacted


CUT_TOKEN_REST = "Qr4St6Vw8Yz0AbCdEf1234"


@pytest.mark.parametrize("head", ["Xb7Kp2Lm9", "k9Zq", "TeKdNnFRIBXu", "aB3dE5gH7jK9mN1"])
@pytest.mark.parametrize("line_break", ["\n", "\r\n", "\n    "])
def test_the_short_first_part_of_a_token_a_line_break_cut_is_found(head: str, line_break: str) -> None:
    """A random token cut by a real line break after 4 to 15 characters: its rest was replaced as
    a generic token, and the first part, too short to be judged alone, went out."""
    redacted = REDACTOR.text(f'value = "{head}{line_break}{CUT_TOKEN_REST}" done')
    assert head not in redacted and CUT_TOKEN_REST not in redacted, redacted


@pytest.mark.parametrize(
    "text",
    [
        "the token\n<SECRET>", "sha256\n<SECRET>", "abc123\n<SECRET>", "TestCase\n<SECRET>",
        "getName\n<SECRET>", "AssertionError\n<SECRET>", "line 1234\n<SECRET>", "Xb7Kp2Lm9 \n<SECRET>",
        "Xb7Kp2Lm9\nname <SECRET>", "Xb7Kp2Lm9\n<EMAIL>",
    ],
)
def test_a_word_name_or_number_before_a_replaced_line_stays(text: str) -> None:
    assert REDACTOR.text(text) == text


@pytest.mark.parametrize(
    ("head", "rest"),
    [
        ("ghp_Ab3dE5gH7j", "K9mN1pQ3sT5vX7zA9bC1dE3fG5"),
        ("hf_x7Kq", "Tz2Wm9Rv4Yb8Nc3Hd6Lp1Fs5Gj0"),
        ("sk-proj-4fQ", "z8Kd2Lm9Qr4St6Vw8Yz0AbCdEf"),
        ("glpat-Zq8W", "x2Ec4Rv6Tb8Yn0Um2Ik"),
        ("npm_a1B2c3", "D4e5F6g7H8i9J0k1L2m3N4o5P6q7"),
    ],
)
def test_a_catalogue_token_whose_short_first_part_a_space_split_off_is_found(head: str, rest: str) -> None:
    """A token's prefix and too few characters for a whole token, one space, then the rest:
    both parts read random (a digit, or a capital after a small letter), so it is one token
    split, not a prefix-like word before another."""
    redacted = REDACTOR.text(f"export VALUE {head} {rest} # pasted")
    assert head not in redacted and rest not in redacted, redacted


@pytest.mark.parametrize("rest", [6, 7, 12])
@pytest.mark.parametrize("written", [json.dumps, repr])
def test_a_catalogue_token_cut_by_an_escaped_break_leaves_no_short_rest(rest: int, written: object) -> None:
    """A token JSON-escaped or in a repr, cut where a line break cut it: its rest, written after
    ``\\n``, is taken with it however short (the escaped-break rules need 8 characters)."""
    token = "ghp_Zq8Wx2Ec4Rv6Tb8Yn0Um2Ik4Ol6Pa8Sd0Fg1H"
    text = written(f" {token[:-rest]}\n{token[-rest:]} ")  # type: ignore[operator]
    redacted = REDACTOR.text(text)
    assert token[-rest:] not in redacted and token[:12] not in redacted, redacted


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("pip install sk-learn 2024", "sk-learn 2024"), ("from hf_hub 0.20 import x", "hf_hub 0.20"),
        ("hf_Model v2Beta", "hf_Model v2Beta"), ("npm_config 8 times", "npm_config 8"),
        ("see ghp_docs Page2 for tokens", "ghp_docs Page2"), ("ghp_x1 token=abc", "ghp_x1 token="),
        ("ghp_x1 name: Zq8Wx2Ec4Rv6Tb8", "ghp_x1 name: "),
    ],
)
def test_a_prefix_like_word_before_a_space_stays_a_word(text: str, kept: str) -> None:
    """A word that starts like a prefix and reads as a word, or a random head before a key of
    its own, is not joined to what follows the space."""
    assert kept in REDACTOR.text(text)


LONG_CUT = "PVwRrEVQs6OKaHpPCYOXvNTZv01Q87GGkZ6DQS"


@pytest.mark.parametrize("escaped_break", ["\\x0a", "\\u000A", "\\x0d\\x0a"])
def test_the_rest_of_a_token_after_an_escape_of_a_break_left_as_written_is_found(escaped_break: str) -> None:
    """``\\x0a`` and ``\\u000a`` stay as written through the decoding step (a control character):
    the rest of a token after one, its first part replaced alone, went out whole."""
    redacted = REDACTOR.text(f"'{LONG_CUT[:29]}{escaped_break}{LONG_CUT[29:]}'")
    assert "<SECRET>" in redacted and LONG_CUT[29:] not in redacted, redacted


@pytest.mark.parametrize(
    "text",
    [
        "token <SECRET>.\nTraceback (most recent call last):",
        "x <SECRET>\ntest_foo.py::test_a1 FAILED",
        "x <SECRET>\\nstarting server on port 8000",
        "a <SECRET>\nname: Xb7Kp2Lm9Qr4",
        "a <SECRET> end\nXb7Kp2Lm9Qr4",
    ],
)
def test_a_line_after_a_placeholder_keeps_words_names_and_distant_tokens(text: str) -> None:
    assert REDACTOR.text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        f"loading /tmp/models/{TOKEN}/weights...",
        f"loading /tmp/models/weights/{TOKEN[:12]}...",
        f"...{TOKEN[-12:]}/models/weights",
        "key 6862644b625d4a3891eacf07b36a53ec and sbp_4b3db9d0e5c8a9f1b2c3d4e5f60718293a4b5c6d",
    ],
)
def test_a_token_in_a_path_or_a_uuid_shaped_key_outside_one_is_found(text: str) -> None:
    """The path rules keep a model path at a log's "..." and a uuid4-named temp dir, not a
    token a path holds whole or cut, nor uuid-shaped hex that is not a path's component."""
    redacted = REDACTOR.text(text)
    assert "<SECRET>" in redacted and TOKEN[2:10] not in redacted and "6862644b625d" not in redacted, redacted


# --- known values -----------------------------------------------------------------------------


def test_known_values_come_from_variables_urls_the_hub_token_file_and_netrc(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("hub-token-value-1\n")
    (tmp_path / "netrc").write_text("machine a.example login bob password netrc-pass-2\n")
    environ = {"HF_HOME": str(tmp_path), "NETRC": str(tmp_path / "netrc"),
               "HTTPS_PROXY": "http://u:proxy%2Fpass3@proxy:3128", "MY_API_TOKEN": "env-token-value-4"}
    values = known_secret_values(environ, ["env-token-value-4"])
    expected = {"hub-token-value-1", "netrc-pass-2", "proxy/pass3", "proxy%2Fpass3", "env-token-value-4"}
    assert expected <= set(values)
    assert known_secret_values({}, []) == ()
    assert netrc_passwords("default login x password  pw-default") == ["pw-default"]


def test_a_known_value_is_masked_in_every_form_a_log_spells_it() -> None:
    redactor = build_redactor(None, [], {}, IDENTITY)
    value = "plain words & 'quotes' \"too\"\n"
    before = f"seen {value!r} early"
    assert redactor.text(before) == before
    assert redactor.register_secret(value) and not redactor.register_secret(value)
    forms = [value, quote(value, safe=""), base64.b64encode(value.encode()).decode(), json.dumps(value),
             repr(value), repr(value.encode())]
    assert set(encoded_forms(value)) >= {quote(value, safe=""), json.dumps(value)[1:-1], repr(value)[1:-1]}
    for form in forms:
        assert "words" not in redactor.text(f"x {form} y"), form
    assert "words" not in redactor.text(before)
    assert redactor.binary(value.encode("utf-16-le")) == b"<SECRET>"
    assert not redactor.register_secret("short")


def test_the_terminal_view_shares_registered_values_and_keeps_paths() -> None:
    redactor = build_redactor(Path("/srv/checkouts/specgate"), [], {}, IDENTITY)
    terminal = redactor.secrets_only()
    line = "E   at /home/alice-ops/x.py: value registered-later-9"
    assert terminal.text(line) == line
    redactor.register_secret("registered-later-9")
    assert terminal.text(line) == "E   at /home/alice-ops/x.py: value <SECRET>"
    assert redactor.text(line) == "E   at <PATH> value <SECRET>"


def test_mask_commands_only_under_github_actions_one_per_line() -> None:
    assert github_mask_commands(["abc-secret-1\nsecond-line-2"], {"GITHUB_ACTIONS": "true"}) == [
        "::add-mask::abc-secret-1", "::add-mask::second-line-2"]
    assert github_mask_commands(["abc-secret-1"], {}) == []


def test_redacted_lines_hold_a_line_until_it_ends() -> None:
    target = io.StringIO()
    stream = RedactedLines(target, lambda: REDACTOR.secrets_only().text)
    stream.write("error at http://svc:Pa55-")
    assert target.getvalue() == ""
    stream.write("word@host/v1\nnext")
    assert target.getvalue() == "error at http://<SECRET>@host/v1\n"
    stream.flush()
    assert target.getvalue().endswith("next")


def test_a_known_value_of_several_lines_is_masked_where_text_is_read_by_line() -> None:
    redactor = build_redactor(Path("/srv/checkouts/specgate"), [], {}, IDENTITY)
    value = "first-half-Q9\r\nsecond-half-Z8\u2028third-part-X7"
    redactor.register_secret(value)
    text = f"value: {value} end"
    target = io.StringIO()
    stream = RedactedLines(target, lambda: redactor.secrets_only().text)
    stream.write(text + "\n")
    printed = [redactor.text(text), redactor.by_lines(text), target.getvalue()]
    assert printed[0] == "value: <SECRET> end"
    parts = ("first-half", "second-half", "third-part")
    assert [part for part in parts if any(part in output for output in printed)] == []


@pytest.mark.parametrize("inside", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028"])
def test_redacted_lines_end_at_a_line_feed_only(inside: str) -> None:
    """A quoted value holding a character ``str.splitlines`` breaks at is redacted whole, as the
    evidence files redact it: the rules know no line break but ``\\n``."""
    target = io.StringIO()
    stream = RedactedLines(target, lambda: REDACTOR.secrets_only().text)
    stream.write(f'connect password: "Pa55{inside}word-9" ok\nnext\r\n')
    assert target.getvalue() == 'connect password: "<SECRET>" ok\nnext\r\n'


# --- planted everywhere a run writes text, and in the terminal --------------------------------


class _Planted(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint whose models' ``owned_by``, ``Server`` header and error
    bodies carry corpus tokens."""

    tokens: ClassVar[list[str]] = []

    def version_string(self) -> str:
        return f"srv {self.tokens[1]}"

    def _reply(self, status: int, payload: object) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.endswith("/models"):
            model = {"id": "tiny", "object": "model", "owned_by": self.tokens[0]}
            self._reply(200, {"object": "list", "data": [model]})
        else:
            self._reply(404, {"error": f"no route, see {self.tokens[2]}"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._reply(500, {"error": {"message": "upstream refused: " + " ".join(self.tokens)}})

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def planted_endpoint() -> Iterator[str]:
    _Planted.tokens = [planted.token for planted in PLANTED]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Planted)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


PLANTING_SPEC = """
import json, os
import pytest

TOKENS = json.load(open(os.environ["SPECGATE_TOKENS"]))
URL = os.environ["SPECGATE_PLANTED_URL"]
PASSWORD = os.environ["SPECGATE_URL_PASSWORD"]

@pytest.mark.ac("AC-1", title="corpus " + TOKENS[3] + " " + TOKENS[-1])
@pytest.mark.parametrize("index", range(len(TOKENS)), ids=[t[:100] for t in TOKENS])
def test_planted(evidence, index):
    token = TOKENS[index]
    evidence.note("note " + token, {"value": token})
    evidence.attach("a" + str(index) + ".log", "log line with " + token + "\\n")
    local_copy = {"in a local": token}
    if index % 3 == 0:
        pytest.skip("skipping because " + token)
    if index % 3 == 1:
        raise RuntimeError("exception text " + token)
    assert local_copy == {}, "assertion text " + token

@pytest.mark.ac("AC-2", title="engine")
@pytest.mark.engine("endpoint", url=URL)
def test_engine_error_body(engine, evidence):
    engine.chat([{"role": "user", "content": "hi"}], temperature=0, max_tokens=2)

@pytest.mark.ac("AC-3", title="engine url")
@pytest.mark.engine("endpoint", url="http://svc:" + PASSWORD + "@127.0.0.1:9/v1", health_deadline_s=0.5)
def test_engine_url_password(engine):
    pass
"""


def test_the_corpus_planted_everywhere_leaks_nowhere_on_disk_or_terminal(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, planted_endpoint: str
) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps([planted.token for planted in PLANTED]))
    summary = tmp_path / "summary.md"
    password = "Url-" + "".join(random.Random(7).choices(string.ascii_letters + string.digits, k=20))
    monkeypatch.setenv("SPECGATE_TOKENS", str(tokens))
    monkeypatch.setenv("SPECGATE_PLANTED_URL", planted_endpoint)
    monkeypatch.setenv("SPECGATE_URL_PASSWORD", password)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makepyfile(test_planted=PLANTING_SPEC)
    pytester.makepyprojecttoml('[tool.specgate]\ngates = ["PR-A"]\n')
    (pytester.path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nout/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "specs")
    result = pytester.runpytest_subprocess(
        "--specgate-evidence=out", "-l", "-rA", "-v", "-p", "no:cacheprovider"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) >= 40 and outcomes.get("failed", 0) >= 80, outcomes
    terminal = "\n".join(result.outlines + result.errlines)
    assert "upstream refused" in terminal and "in a local" in terminal and "skipping because" in terminal
    written = [*sorted(path for path in (pytester.path / "out").rglob("*") if path.is_file()), summary]
    stored = every_byte_written(written)
    contents = {where: data.decode("utf-8", "replace") for where, data in stored.items()}
    contents["terminal"] = terminal
    assert any(where.endswith("records.jsonl") for where in contents)
    leaks = [
        (where, planted.vendor.vendor, core[:24])
        for where, text in contents.items()
        for planted in PLANTED
        for core in leaked(text, planted.cores)
    ]
    leaks += [(where, "url password", password) for where, text in contents.items() if password[4:] in text]
    assert leaks == [], "\n".join(map(str, leaks[:40]))


def test_a_key_named_nonce_keeps_nothing_from_the_redactor() -> None:
    """The signer leaves a job nonce out of its own check (test_fleet_signer); the redactor keeps no
    value for a key's name, so a secret a spec files under ``nonce`` is still replaced."""
    nonce = "0123456789abcdef0123456789abcdef"
    assert REDACTOR.value({"predicate": {"nonce": nonce, "note": nonce}}) == {
        "predicate": {"nonce": "<SECRET>", "note": "<SECRET>"}
    }
