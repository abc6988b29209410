"""Redaction against secret formats it was not written from, and against what it must keep.

The corpus (data/secret_corpus.json) holds the true-positive examples gitleaks and
detect-secrets publish for their rules, and vendor documentation examples for signed URLs and
cloud host names; it was built from those sources, never from this project's patterns, so it
checks the catalogue (pytest_specgate/evidence/_secret_rules.py) instead of restating it.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import every_byte_written, git

from pytest_specgate.evidence import LocalIdentity, build_redactor
from pytest_specgate.evidence._redact import catalogue_rules, looks_random
from pytest_specgate.evidence._secret_rules import TOKEN_FORMATS

CORPUS_FILE = Path(__file__).parent / "data" / "secret_corpus.json"
CORPUS: list[dict[str, Any]] = json.loads(CORPUS_FILE.read_text())["entries"]
IDENTITY = LocalIdentity(
    user_names=("alice-ops",), host_names=("buildbox-7",), home_dirs=("/home/alice-ops",)
)
REDACTOR = build_redactor(Path("/srv/checkouts/specgate"), [], {}, IDENTITY)


PEM_LINE = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2"
PEM_BLOCK = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_LINE}\n-----END RSA PRIVATE KEY-----"
SLACK = "xoxb-781236542736-2364535789652-GkwFDQoHqzXDVsC6Gz"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


def leaked(output: str, cores: list[str]) -> list[str]:
    """Cores found in ``output`` as written or as JSON would escape them."""
    return [core for core in cores if core in output or json.dumps(core)[1:-1] in output]


def test_the_corpus_is_large_and_names_its_sources() -> None:
    sources = json.loads(CORPUS_FILE.read_text())["sources"]
    assert set(sources) == {"gitleaks", "detect-secrets"} and len(CORPUS) >= 200
    kinds = {entry["rule"].split(":")[0] for entry in CORPUS}
    assert kinds == {"gitleaks", "detect-secrets", "docs"}
    assert all(entry["cores"] and entry["from"] for entry in CORPUS)


@pytest.mark.parametrize("entry", CORPUS, ids=[f"{i}-{e['rule']}" for i, e in enumerate(CORPUS)])
def test_no_published_example_survives(entry: dict[str, Any]) -> None:
    assert leaked(REDACTOR.text(entry["text"]), entry["cores"]) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg\n-----END EC PRIVATE KEY-----\nnext",
         "<SECRET>\nnext"),
        ("pasted body\n" + (PEM_LINE + "\n") * 2 + "ab==", "pasted body\n<SECRET>"),
        (f"id {JWT} end", "id <TOKEN> end"),
        (f"{PEM_BLOCK}  {PEM_BLOCK}", "<SECRET>  <SECRET>"),
        ("ghp_" + "aB3dE" * 7 + "a", "<SECRET>"),
        ("xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1MBS", "<SECRET>"),
        ("post https://hooks.slack.com/services/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 now",
         "post https://<SECRET> now"),
        ("GET /o?X-Amz-Date=20130524T000000Z&X-Amz-Signature=aeeed9bbccd4d02ee5c0&key=AIzaSyNHxIf32IQ1",
         "GET /o?X-Amz-Date=20130524T000000Z&X-Amz-Signature=<SECRET>&key=<SECRET>"),
        ('{"client_secret_b64": "c2VjcmV0LXZhbHVlLTEyMzQ1Njc4OQ==", "sessionHex": "8b1118b376c313ed420e"}',
         '{"client_secret_b64": "<SECRET>", "sessionHex": "<SECRET>"}'),
        ("on ip-10-0-1-23.ec2.internal", "on <HOST>"),
        ('{"session\\u005fkey": "8b1118b376c313ed420e"}', '{"session_key": "<SECRET>"}'),
        ("ghp\\u005f0123456789abcdef\n0123456789abcdefABCD end", "<SECRET> end"),
        ("Z2hwX2ExQjJjM0Q0ZTVhMUIyYzNENGU1YTFCMmMzRDRlNWFiY2RlZg== and 68665f616263646566676869717273747576",
         "<SECRET> and <SECRET>"),
    ],
)
def test_catalogue_formats_are_replaced(text: str, expected: str) -> None:
    assert REDACTOR.text(text) == expected
    assert REDACTOR.text(expected) == expected


SPLIT_TOKENS = [
    "ghp_" + "a1B2c3D4e5" * 3 + "abcdef",
    "github_pat_" + "A1b2C3d4E5" * 8 + "xy",
    "hf_" + "AbCdEfGhIj" * 3 + "Kl9z",
    "AKIAQWERTYUIOPASDFGH",
    "xoxb-781236542736-2364535789652-GkwFDQoHqzXDVsC6GzqYUypD",
    JWT,
]


@pytest.mark.parametrize("token", SPLIT_TOKENS, ids=lambda token: token[:6])
@pytest.mark.parametrize("where", [0.3, 0.5, 0.7])
@pytest.mark.parametrize("indent", ["", "    "])
def test_a_token_split_by_a_line_break_is_one_secret(token: str, where: float, indent: str) -> None:
    cut = max(int(len(token) * where), 9)
    text = f"log {token[:cut]}\n{indent}{token[cut:]} done"
    redacted = REDACTOR.text(text)
    assert token[:cut] not in redacted and token[cut:] not in redacted, redacted
    assert redacted.startswith("log <") and redacted.endswith("> done")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"{SLACK}\nqY5pD end", "<SECRET> end"),
        (f"{SLACK}\nStarting the server", "<SECRET>\nStarting the server"),
        (f"{SLACK}\nvOxJQRLRPbWhHdBqp end", "<SECRET> end"),
        ("GH_PAT=00000000((Bearer 0000000/", "GH_PAT=<SECRET>((Bearer <TOKEN>"),
        ("hf_" + "0" * 30 + "\n Bearer 00000000", "<HF_TOKEN>\n Bearer <TOKEN>"),
        (f"{JWT}\nBearer 00000000", "<TOKEN>\nBearer <TOKEN>"),
        ("hvb." + "a1" * 80 + "\ntoken: s.ZC9Ecf4M5g9o34Q6RkzGsj0z", "<SECRET>\ntoken: <SECRET>"),
    ],
)
def test_a_whole_length_token_goes_on_only_into_a_word_with_a_digit(text: str, expected: str) -> None:
    """The documented limit: a variable-length token that could end at the line break takes the
    next line's word only when it reads as a random tail, never a word or a key of its own."""
    assert REDACTOR.text(text) == expected


ENVIRON = {
    "AWS_ACCESS_KEY_ID": "AKIAZZZZZZZZZZZZZZZZ",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GH_PAT": "pat-value-0001",
    "JWT": "jwt-value-0002",
    "SLACK_WEBHOOK_URL": "https://example.invalid/hook/0003",
    "SENTRY_DSN": "https://abc0004@o1.ingest.example/1",
    "DB_PASSWORD": "pw-value-0005",
    "DEPLOY_KEY": "1",
    "MONKEY": "banana-split",
    "COMPAT": "compat-mode",
    "PWD": "/srv/checkouts/specgate",
}
NOT_SECRET = ("DEPLOY_KEY", "MONKEY", "COMPAT", "PWD")


def test_environment_values_are_redacted_wherever_they_appear() -> None:
    redactor = build_redactor(Path("/srv/checkouts/specgate"), [], ENVIRON, IDENTITY)
    secrets = [value for name, value in ENVIRON.items() if name not in NOT_SECRET]
    text = " | ".join(f"got {value} here" for value in secrets)
    assert redactor.text(text) == " | ".join("got <SECRET> here" for _ in secrets)
    assert redactor.encode(gzip.compress(text.encode())) == gzip.compress(
        " | ".join("got <SECRET> here" for _ in secrets).encode(), mtime=0
    )


def test_short_and_non_credential_variables_leave_the_text_alone() -> None:
    redactor = build_redactor(Path("/srv/checkouts/specgate"), [], ENVIRON, IDENTITY)
    text = "ran 1 test: banana-split in compat-mode, 1 passed"
    assert redactor.text(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("export GH_PAT=ghx-not-a-known-format", "export GH_PAT=<SECRET>"),
        ("JWT: opaque-session-value", "JWT: <SECRET>"),
        ("éJWT=00000000", "éJWT=<SECRET>"),
        ("SLACK_WEBHOOK_URL='https://chat.example/x/y'", "SLACK_WEBHOOK_URL='<SECRET>'"),
        ("AWS_ACCESS_KEY_ID=notreallyakey", "AWS_ACCESS_KEY_ID=<SECRET>"),
        ("MY_SERVICE_CREDENTIALS=user:pw", "MY_SERVICE_CREDENTIALS=<SECRET>"),
        ("KEY=1 MONKEY=banana DEPLOY_KEY=ab", "KEY=1 MONKEY=banana DEPLOY_KEY=ab"),
    ],
)
def test_credential_variables_are_redacted_by_name_outside_the_environment(text: str, expected: str) -> None:
    assert REDACTOR.text(text) == expected


SHA1 = "4b3db9d0e5c8a9f1b2c3d4e5f60718293a4b5c6d"
SHA256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


@pytest.mark.parametrize(
    "text",
    [
        f"commit {SHA1} on main",
        f"sha256:{SHA256}",
        f"specgate-evidence AC-10 ac-sha256={SHA256} bundle-sha256={SHA256}",
        json.dumps({"commit": SHA1, "sha256": SHA256, "gitCommit": SHA1, "digest": {"sha256": SHA256}}),
        f"weights model-00001-of-00002.safetensors etag {SHA256}",
        "run 20261203T170000Z-1a2b3c in out/20261203T170000Z-1a2b3c/manifest.json",
        "tests/test_x.py::test_key[deadbeefcafe0123] tests/test_y.py::TestToken::test_session[a-b]",
        "model Qwen/Qwen2.5-0.5B-Instruct draft mlx-community/Llama-3.2-1B-Instruct-4bit",
        "uuid 123e4567-e89b-12d3-a456-426614174000 at 2026-12-03T17:00:00Z",
        "tokenizer_sha256: " + SHA256,
        "tokens_per_s: 123.5 path: /usr/lib/python3.11/site-packages keyword: a1b2c3d4e5f6",
        "author: Jane Doe, design: a1b2c3d4e5f6",
        "auth_method: oauth2-client-credentials",
    ],
)
def test_digests_ids_and_names_survive_untouched(text: str) -> None:
    assert REDACTOR.text(text) == text


def test_digests_in_records_survive_the_json_walk() -> None:
    record = {"commit": SHA1, "files": [{"name": "a.json", "sha256": SHA256}], "run": {"id": "20261203T1-ab"}}
    assert REDACTOR.value(record) == record


@pytest.mark.parametrize(
    ("value", "random"),
    [
        ("8b1118b376c313ed420e", True),
        ("c2VjcmV0LXZhbHVlLTEyMzQ1Njc4OQ", True),
        ("deadbeefdeadbeef", False),
        ("0123456789012345", False),
        ("oauth2-client-credentials", False),
        ("Qwen2.5-0.5B-Instruct", False),
        ("/usr/lib/X86abcdefghijk", False),
        ("short1A", False),
    ],
)
def test_what_looks_random(value: str, random: bool) -> None:
    assert looks_random(value) is random


def test_every_token_format_starts_with_a_literal_and_compiles() -> None:
    """The regex engine skips ahead to each format's first character; a look-behind on it keeps a
    match from starting inside a word, so each position starts at most one attempt."""
    assert all(token.prefix[0].isalnum() for token in TOKEN_FORMATS)
    names = [rule.name for rule in catalogue_rules()]
    assert len(names) == len(set(names))


# --- every place text is stored ---------------------------------------------------------------

_K_WORD = re.compile(r"[A-Za-z_][\w.+-]*")
"""Examples that ``-k`` accepts as one identifier (pytest's expression lexer)."""
PLANTING_SPEC = """
import gzip, io, json, os, zipfile
import pytest

CORPUS = json.load(open(os.environ["SPECGATE_CORPUS"]))["entries"]
TEXTS = [entry["text"] for entry in CORPUS]
ONE_LINE = [text for text in TEXTS if "\\n" not in text]

@pytest.mark.ac("AC-1", title="corpus " + ONE_LINE[0] + " " + ONE_LINE[-1])
@pytest.mark.parametrize("index", range(len(TEXTS)), ids=[text[:120] for text in TEXTS])
def test_planted(evidence, index):
    text = TEXTS[index]
    evidence.note("note " + text, text)
    evidence.measure("m" + str(index) + " " + text, 1.0, "ms", at_most=2.0)
    if index == 0:
        everything = "\\n".join(TEXTS)
        evidence.attach("plain.log", everything)
        evidence.attach("packed.log.gz", gzip.compress(everything.encode()))
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for number, line in enumerate(ONE_LINE):
                archive.writestr(f"{number}-{line[:80]}.txt", line)
        evidence.attach("bundle.zip", buffer.getvalue())
    if "\\n" not in text and "/" not in text:
        evidence.attach(text[:80] + ".txt", "named after a secret")
    assert False, text
"""


def test_the_corpus_planted_everywhere_text_is_stored_leaks_nowhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    key = tmp_path / "signing.pem"
    private = Ed25519PrivateKey.generate()
    key.write_bytes(private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("SPECGATE_CORPUS", str(CORPUS_FILE))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makepyfile(test_planted=PLANTING_SPEC)
    pytester.makepyprojecttoml('[tool.specgate]\ngates = ["PR-A"]\n')
    (pytester.path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nout/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "specs")
    k_words = sorted({entry["text"] for entry in CORPUS if _K_WORD.fullmatch(entry["text"])})
    expression = " or ".join(["test_planted", *k_words])  # selects every test, stores every word
    result = pytester.runpytest(
        "--specgate-evidence=out", f"--specgate-sign-key={key}", "-k", expression, "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=len(CORPUS))
    result.stdout.fnmatch_lines(["specgate: signed *"])
    written = [*sorted(path for path in (pytester.path / "out").rglob("*") if path.is_file()), summary]
    names = {path.name for path in written}
    stored = {"records.jsonl", "run.json", "evidence.md", "manifest.json", "receipt.json", "summary.md"}
    assert stored <= names, names
    assert len(k_words) >= 10 and any(name.endswith(".zip") for name in names)
    contents = every_byte_written(written)
    assert any("!" in where for where in contents)
    leaks = [
        (where, entry["rule"], core[:24])
        for where, data in contents.items()
        for entry in CORPUS
        for core in leaked(data.decode("utf-8", "replace"), entry["cores"])
    ]
    assert leaks == [], "\n".join(map(str, leaks))
