"""Secrets the run knows by value, masked by exact match in every form a log can spell them.

Detection by shape (:mod:`._generic_secrets`) guesses; a value the run already holds as a secret
needs no guess. GitHub Actions masks every registered secret by exact value in every log line;
this module gives the redactor the same power: the values of credential-looking environment
variables, the passwords in URLs those variables hold, the Hugging Face token file, ``.netrc``
passwords, an engine's ``api_key`` and the value a spec hands to ``evidence.secret(value)``.
A value is also masked in the forms it takes on its way into a log: percent-encoded, base64,
JSON-escaped and Python ``repr`` (``\\n``, ``\\x..``, ``\\u....``), as text and as a bytes repr.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from urllib.parse import quote, quote_plus, unquote

MIN_KNOWN_LENGTH = 6
"""Shorter values are not credentials; masking them would shred the text."""
_URL_PASSWORD = re.compile(r"://[^\s/?#@:\"'`<>]*:([^\s/?#@\"'`<>]+)@")


def url_passwords(text: str) -> list[str]:
    """The passwords of ``scheme://user:PASSWORD@host`` URLs in ``text``, percent-decoded too."""
    found: list[str] = []
    for match in _URL_PASSWORD.finditer(text):
        found += [match.group(1), unquote(match.group(1))]
    return found


def netrc_passwords(text: str) -> list[str]:
    """The ``password`` values of a ``.netrc`` file (its tokens are whitespace-separated)."""
    words = text.split()
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == "password"]


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    except OSError:
        return ""


def hub_token_file(environ: Mapping[str, str]) -> Path | None:
    """Where ``huggingface_hub`` keeps the token of ``hf auth login``: ``HF_TOKEN_PATH``, else
    ``HF_HOME/token``, else ``~/.cache/huggingface/token`` (``XDG_CACHE_HOME`` respected)."""
    if environ.get("HF_TOKEN_PATH"):
        return Path(environ["HF_TOKEN_PATH"])
    if environ.get("HF_HOME"):
        return Path(environ["HF_HOME"]) / "token"
    cache = environ.get("XDG_CACHE_HOME") or (f"{environ['HOME']}/.cache" if environ.get("HOME") else "")
    return Path(cache) / "huggingface" / "token" if cache else None


def netrc_file(environ: Mapping[str, str]) -> Path | None:
    """``NETRC``, else ``~/.netrc``, as curl, git and requests read it."""
    if environ.get("NETRC"):
        return Path(environ["NETRC"])
    return Path(environ["HOME"]) / ".netrc" if environ.get("HOME") else None


def known_secret_values(
    environ: Mapping[str, str],
    env_secrets: Iterable[str],
    read_text: Callable[[Path], str] = _read_text,
) -> tuple[str, ...]:
    """Every value this run knows is secret before any spec runs: ``env_secrets`` (the values of
    credential-looking variables), passwords in URLs any variable holds (``HTTPS_PROXY``), the hub
    token file and ``.netrc`` passwords. Files are found through ``environ`` only, so a redactor
    built for an empty environment reads none."""
    values = list(env_secrets)
    for value in environ.values():
        if "://" in value:
            values += url_passwords(value)
    token_file = hub_token_file(environ)
    if token_file is not None:
        values.append(read_text(token_file).strip())
    netrc = netrc_file(environ)
    if netrc is not None:
        values += netrc_passwords(read_text(netrc))
    return usable_secrets(values)


def usable_secrets(values: Iterable[str]) -> tuple[str, ...]:
    """Values long enough to mask, longest first (a value is masked before a part of it)."""
    kept = {value for value in values if len(value) >= MIN_KNOWN_LENGTH}
    return tuple(sorted(kept, key=lambda value: (-len(value), value)))


def encoded_forms(value: str) -> tuple[str, ...]:
    """``value`` and the spellings a log gives it: percent-encoded (``quote``, ``quote_plus``),
    base64 and URL-safe base64 (padded and not), JSON-escaped, and the inside of its ``repr``,
    ``ascii`` and bytes ``repr`` (``\\n``, ``\\x..``, ``\\u....``); longest first."""
    raw = value.encode("utf-8", "surrogatepass")
    forms = {
        value,
        quote(value, safe=""),
        quote(value),
        quote_plus(value),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        repr(value)[1:-1],
        ascii(value)[1:-1],
        repr(raw)[2:-1],
    }
    for encoder in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encoder(raw).decode()
        forms |= {encoded, encoded.rstrip("=")}
    return usable_secrets(forms)


def mask_pattern(values: Iterable[str]) -> re.Pattern[str] | None:
    """One alternation of every form of every value, and of each line of a value that spans
    lines, longest first; None for no value. What is read a line at a time (specgate's terminal
    and command output, ``evidence.md``) never holds a value of several lines whole: its lines
    are masked one by one, as the runner's ``::add-mask::`` masks them."""
    pieces = [piece for value in values for piece in (value, *value.splitlines())]
    forms = usable_secrets(form for piece in pieces for form in encoded_forms(piece))
    return re.compile("|".join(re.escape(form) for form in forms)) if forms else None


def github_mask_commands(values: Iterable[str], environ: Mapping[str, str]) -> list[str]:
    """``::add-mask::`` workflow commands for ``values`` under GitHub Actions (``GITHUB_ACTIONS=true``),
    one per line of a value (the runner masks line by line), so the CI log hides them too; none
    elsewhere."""
    if environ.get("GITHUB_ACTIONS") != "true":
        return []
    lines = {line for value in values for line in value.splitlines() if len(line) >= MIN_KNOWN_LENGTH}
    return [f"::add-mask::{line}" for line in sorted(lines)]
