"""Loaders for the project's pinned data (``fixtures/``): prompt sets and model pairs.

Pinned data is what makes two runs comparable, so the loaders refuse anything
off-shape with an error naming the file and the field, and a prompt set listed in
the ``SHA256SUMS`` file beside it must match its digest byte for byte.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.fixtures_dir import FIXTURES_DIR_NAME, configured_fixtures_dir
from pytest_specgate.contracts.validation import is_count, is_real
from pytest_specgate.measure.samples import ChatMessage, Prompt

PROMPTS_SCHEMA = "specgate.prompts/v1"
MODEL_PAIRS_SCHEMA = "specgate.model-pairs/v1"
DIGESTS_FILE = "SHA256SUMS"
CHAT_ROLES = frozenset({"system", "user", "assistant"})
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")


class FixtureFileError(SpecgateInputError):
    """A pinned data file is missing, unreadable, off-shape or not the pinned bytes."""


def _fail(path: Path, field: str, expected: str, found: object) -> FixtureFileError:
    return FixtureFileError.mismatch(f"{path}: field {field!r}", expected, found)


def _field(obj: Mapping[str, object], key: str, path: Path, where: str) -> object:
    if key not in obj:
        raise FixtureFileError(f"{path}: field {where + key!r}: missing")
    return obj[key]


def _str(obj: Mapping[str, object], key: str, path: Path, where: str = "") -> str:
    value = _field(obj, key, path, where)
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, where + key, "a non-empty string", value)
    return value


def _positive_int(obj: Mapping[str, object], key: str, path: Path, where: str = "") -> int:
    value = _field(obj, key, path, where)
    if not is_count(value):
        raise _fail(path, where + key, "an integer >= 1", value)
    return value


def _positive_number(obj: Mapping[str, object], key: str, path: Path, where: str = "") -> float:
    value = _field(obj, key, path, where)
    if not is_real(value) or not value > 0:
        raise _fail(path, where + key, "a number > 0", value)
    return float(value)


def _non_negative_number(obj: Mapping[str, object], key: str, path: Path) -> float:
    value = _field(obj, key, path, "")
    if not is_real(value) or value < 0:
        raise _fail(path, key, "a number >= 0", value)
    return float(value)


def _object(value: object, path: Path, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise _fail(path, where or "<top level>", "a JSON object", type(value).__name__)
    return value


def _list(obj: Mapping[str, object], key: str, path: Path, where: str = "") -> list[object]:
    value = _field(obj, key, path, where)
    if not isinstance(value, list) or not value:
        raise _fail(path, where + key, "a non-empty list", value)
    return value


def _str_list(
    obj: Mapping[str, object], key: str, path: Path, where: str, expected: str
) -> tuple[str, ...]:
    """A non-empty list of non-empty strings; ``expected`` names what each item is."""
    items = _list(obj, key, path, where)
    for index, item in enumerate(items):
        if not isinstance(item, str) or not item:
            raise _fail(path, f"{where}{key}[{index}]", expected, item)
    return tuple(str(item) for item in items)


def _read_json(path: Path) -> tuple[bytes, object]:
    from pytest_specgate.contracts.validation import read_json_file

    try:
        return read_json_file(path)
    except SpecgateInputError as error:
        raise FixtureFileError(f"pinned data file {error}") from None


def _check_schema(document: Mapping[str, object], expected: str, path: Path) -> None:
    found = document.get("schema")
    if found != expected:
        raise _fail(path, "schema", repr(expected), found)


def project_fixtures_dir() -> Path:
    """The project's pinned fixtures: ``[tool.specgate] fixtures_dir`` (relative to its
    pyproject.toml), else ``fixtures/`` in pytest's rootdir, as the plugin set it for this run;
    outside a pytest run, ``fixtures/`` in the current directory. An adopter's fixtures live in
    the adopter's project, never inside the installed package."""
    directory = configured_fixtures_dir() or Path.cwd() / FIXTURES_DIR_NAME
    if not directory.is_dir():
        raise FixtureFileError(
            f"{directory}: pinned fixtures directory not found; put the project's fixtures there "
            "or name the directory in [tool.specgate] fixtures_dir (relative to pyproject.toml)"
        )
    return directory


def listed_digest(path: Path) -> str | None:
    """The sha256 the sibling ``SHA256SUMS`` (sha256sum format) pins for ``path``, if any."""
    listing = path.parent / DIGESTS_FILE
    if not listing.is_file():
        return None
    for number, line in enumerate(listing.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        digest, _, name = line.partition("  ")
        if not re.fullmatch(r"[0-9a-f]{64}", digest) or not name:
            raise FixtureFileError(
                f"{listing}:{number}: expected '<64 hex sha256>  <file name>', found {line!r}"
            )
        if name.lstrip("*") == path.name:
            return digest
    return None


@dataclass(frozen=True)
class PromptSet:
    """A pinned prompt set and the sha256 of the exact bytes it was read from."""

    id: str
    version: int
    description: str
    temperature: float
    max_tokens: int
    prompts: tuple[Prompt, ...]
    path: Path
    sha256: str

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "version": self.version,
            "file": self.path.name,
            "sha256": self.sha256,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "prompt_count": len(self.prompts),
            "prompt_ids": [prompt.id for prompt in self.prompts],
        }


def _message(value: object, path: Path, where: str) -> ChatMessage:
    message = _object(value, path, where)
    role = _str(message, "role", path, where)
    if role not in CHAT_ROLES:
        raise _fail(path, where + "role", f"one of {sorted(CHAT_ROLES)}", role)
    return ChatMessage(role, _str(message, "content", path, where))


def _prompt(value: object, index: int, default_max_tokens: int, path: Path) -> Prompt:
    where = f"prompts[{index}]."
    entry = _object(value, path, where)
    prompt_id = _str(entry, "id", path, where)
    messages = tuple(
        _message(message, path, f"{where}messages[{position}].")
        for position, message in enumerate(_list(entry, "messages", path, where))
    )
    if messages[-1].role != "user":
        raise _fail(path, f"{where}messages[-1].role", "'user' (the turn to answer)",
                    messages[-1].role)
    max_tokens = (
        _positive_int(entry, "max_tokens", path, where)
        if "max_tokens" in entry
        else default_max_tokens
    )
    return Prompt(prompt_id, messages, max_tokens)


def load_prompt_set(path: Path) -> PromptSet:
    """Read, validate and digest a prompt set; its ``id`` must be its file name's stem."""
    data, parsed = _read_json(path)
    document = _object(parsed, path, "")
    _check_schema(document, PROMPTS_SCHEMA, path)
    set_id = _str(document, "id", path)
    if set_id != path.stem:
        raise _fail(path, "id", f"the file name stem {path.stem!r}", set_id)
    temperature = _non_negative_number(document, "temperature", path)
    max_tokens = _positive_int(document, "max_tokens", path)
    prompts = tuple(
        _prompt(entry, index, max_tokens, path)
        for index, entry in enumerate(_list(document, "prompts", path))
    )
    seen: set[str] = set()
    for index, prompt in enumerate(prompts):
        if prompt.id in seen:
            raise _fail(path, f"prompts[{index}].id", "an id unique in the set", prompt.id)
        seen.add(prompt.id)
    digest = hashlib.sha256(data).hexdigest()
    pinned = listed_digest(path)
    if pinned is not None and pinned != digest:
        raise FixtureFileError(
            f"{path}: sha256 {digest} does not match the pinned {pinned} in "
            f"{path.parent / DIGESTS_FILE}; a changed prompt set needs a new id and version"
        )
    return PromptSet(
        set_id,
        _positive_int(document, "version", path),
        _str(document, "description", path),
        temperature,
        max_tokens,
        prompts,
        path,
        digest,
    )


def load_named_prompt_set(name: str, fixtures_dir: Path | None = None) -> PromptSet:
    """``prompts/<name>.json`` of the project's fixtures (or of ``fixtures_dir``)."""
    directory = project_fixtures_dir() if fixtures_dir is None else fixtures_dir
    return load_prompt_set(directory / "prompts" / f"{name}.json")


@dataclass(frozen=True)
class PinnedModel:
    """One model of a pair, as ``snapshot_download`` needs it."""

    repo_id: str
    revision: str
    revision_pinned: bool
    approx_weight_gb: float
    allow_patterns: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "repo_id": self.repo_id,
            "revision": self.revision,
            "revision_pinned": self.revision_pinned,
            "approx_weight_gb": self.approx_weight_gb,
            "allow_patterns": list(self.allow_patterns),
        }


@dataclass(frozen=True)
class ModelPair:
    """The target/draft pair an acceptance criterion is measured with."""

    ac: str
    spec: str
    backend: str
    num_draft_tokens: int
    prompt_sets: tuple[str, ...]
    target: PinnedModel
    draft: PinnedModel

    @property
    def revisions_pinned(self) -> bool:
        """True only when both models are pinned to commits (a qualifying run needs that)."""
        return self.target.revision_pinned and self.draft.revision_pinned

    def to_dict(self) -> dict[str, object]:
        return {
            "ac": self.ac,
            "spec": self.spec,
            "backend": self.backend,
            "num_draft_tokens": self.num_draft_tokens,
            "prompt_sets": list(self.prompt_sets),
            "revisions_pinned": self.revisions_pinned,
            "target": self.target.to_dict(),
            "draft": self.draft.to_dict(),
        }


def _pinned_model(value: object, path: Path, where: str) -> PinnedModel:
    entry = _object(value, path, where)
    repo_id = _str(entry, "repo_id", path, where)
    if not _REPO_ID.fullmatch(repo_id):
        raise _fail(path, where + "repo_id", "'owner/name'", repo_id)
    revision = _str(entry, "revision", path, where)
    pinned = _field(entry, "revision_pinned", path, where)
    if not isinstance(pinned, bool):
        raise _fail(path, where + "revision_pinned", "true or false", pinned)
    if pinned and not _COMMIT_SHA.fullmatch(revision):
        raise _fail(
            path, where + "revision", "a 40-hex commit sha when revision_pinned is true", revision
        )
    return PinnedModel(
        repo_id,
        revision,
        pinned,
        _positive_number(entry, "approx_weight_gb", path, where),
        _str_list(entry, "allow_patterns", path, where, "a non-empty string"),
    )


def _model_pair(ac: str, value: object, path: Path) -> ModelPair:
    where = f"pairs.{ac}."
    entry = _object(value, path, where)
    return ModelPair(
        ac,
        _str(entry, "spec", path, where),
        _str(entry, "backend", path, where),
        _positive_int(entry, "num_draft_tokens", path, where),
        _str_list(entry, "prompt_sets", path, where, "a prompt set id"),
        _pinned_model(_field(entry, "target", path, where), path, where + "target."),
        _pinned_model(_field(entry, "draft", path, where), path, where + "draft."),
    )


def load_model_pairs(path: Path) -> dict[str, ModelPair]:
    """The pinned pairs by acceptance-criterion id (``"AC-10"``, ``"AC-11"``)."""
    _, parsed = _read_json(path)
    document = _object(parsed, path, "")
    _check_schema(document, MODEL_PAIRS_SCHEMA, path)
    pairs = _object(_field(document, "pairs", path, ""), path, "pairs")
    if not pairs:
        raise _fail(path, "pairs", "at least one pair", pairs)
    return {ac: _model_pair(ac, entry, path) for ac, entry in pairs.items()}


def model_pair(ac: str, path: Path | None = None) -> ModelPair:
    """The pinned pair for ``ac`` from ``path`` (default: the project's ``models/pairs.json``)."""
    pairs_path = project_fixtures_dir() / "models" / "pairs.json" if path is None else path
    pairs = load_model_pairs(pairs_path)
    if ac not in pairs:
        raise FixtureFileError(
            f"{pairs_path}: no pinned model pair for {ac!r}; pairs present: {sorted(pairs)}"
        )
    return pairs[ac]
