"""Pre-boot check that a draft model tokenizes exactly like its target, for every backend.

vLLM and mlx-lm only compare vocabulary *sizes*, so two tokenizers of the same
size but different token-to-id maps pass their checks and then accept garbage
drafts. Speculative decoding is only lossless when both models map every
string to the same ids, so this compares what determines the ids: the
vocabulary and merges, the added/special tokens, the normalizer and
pre-tokenizer, and the beginning/end of sequence tokens. A tokenizer that
cannot be read cannot be verified, and an unverified draft is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pytest_specgate.contracts.engine import EngineStartupRefused

__all__ = [
    "MISMATCH_CODE",
    "UNVERIFIABLE_CODE",
    "TokenizerFingerprint",
    "check_draft_tokenizer",
    "tokenizer_differences",
    "tokenizer_fingerprint",
]

MISMATCH_CODE: Final = "draft_model_tokenizer_mismatch"
UNVERIFIABLE_CODE: Final = "draft_model_tokenizer_unverifiable"
_SPECIAL_KEYS: Final = ("bos_token", "eos_token", "unk_token", "pad_token")
_TOKENIZER_FILES: Final = "tokenizer.json, tokenizer.model or vocab.json"


@dataclass(frozen=True)
class TokenizerFingerprint:
    """What decides the token ids of a model directory's tokenizer, in canonical JSON.

    ``kind`` names the file the ids come from. A sentencepiece ``tokenizer.model``
    is compared by digest (reading its vocabulary needs sentencepiece), so its
    ``vocab`` is empty.
    """

    kind: str
    source: str
    vocab: Mapping[str, int]
    merges: str
    added_tokens: str
    pipeline: str
    special_tokens: tuple[tuple[str, str], ...]


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _special_token_text(value: object) -> str:
    if isinstance(value, Mapping):
        return str(value.get("content"))
    return str(value)


def _special_tokens(model_dir: Path) -> tuple[tuple[str, str], ...]:
    config_path = model_dir / "tokenizer_config.json"
    if not config_path.is_file():
        return ()
    config = json.loads(config_path.read_text(encoding="utf-8"))
    return tuple(
        (key, _special_token_text(config[key]))
        for key in _SPECIAL_KEYS
        if isinstance(config, Mapping) and config.get(key) is not None
    )


def _from_tokenizer_json(model_dir: Path, path: Path) -> TokenizerFingerprint:
    data = json.loads(path.read_text(encoding="utf-8"))
    model = data.get("model") or {}
    vocab = model.get("vocab") or {}
    if isinstance(vocab, list):
        vocab = {str(entry[0]): index for index, entry in enumerate(vocab)}
    return TokenizerFingerprint(
        kind=path.name,
        source=str(path),
        vocab={str(token): int(index) for token, index in vocab.items()},
        merges=_canonical({"type": model.get("type"), "merges": model.get("merges")}),
        added_tokens=_canonical(
            sorted(
                (t.get("id"), t.get("content"), bool(t.get("special")))
                for t in data.get("added_tokens") or []
            )
        ),
        pipeline=_canonical(
            {
                "normalizer": data.get("normalizer"),
                "pre_tokenizer": data.get("pre_tokenizer"),
            }
        ),
        special_tokens=_special_tokens(model_dir),
    )


def _from_sentencepiece(model_dir: Path, path: Path) -> TokenizerFingerprint:
    return TokenizerFingerprint(
        kind=path.name,
        source=str(path),
        vocab={},
        merges=_canonical({"type": "sentencepiece", "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}),
        added_tokens=_canonical([]),
        pipeline=_canonical(None),
        special_tokens=_special_tokens(model_dir),
    )


def _from_vocab_files(model_dir: Path, vocab_path: Path) -> TokenizerFingerprint:
    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    merges_path = model_dir / "merges.txt"
    merges = merges_path.read_text(encoding="utf-8") if merges_path.is_file() else ""
    return TokenizerFingerprint(
        kind=vocab_path.name,
        source=str(vocab_path),
        vocab={str(token): int(index) for token, index in vocab.items()},
        merges=_canonical({"type": "BPE", "merges": merges.splitlines()}),
        added_tokens=_canonical([]),
        pipeline=_canonical(None),
        special_tokens=_special_tokens(model_dir),
    )


def tokenizer_fingerprint(model_dir: Path) -> TokenizerFingerprint | None:
    """The fingerprint of a local model directory, or None when it has no tokenizer files."""
    readers = (
        ("tokenizer.json", _from_tokenizer_json),
        ("tokenizer.model", _from_sentencepiece),
        ("vocab.json", _from_vocab_files),
    )
    for name, read in readers:
        path = model_dir / name
        if path.is_file():
            return read(model_dir, path)
    return None


def _first_vocabulary_difference(target: Mapping[str, int], draft: Mapping[str, int]) -> str:
    """The lowest-id target token the draft maps elsewhere, else the draft's first extra token."""
    for token, index in sorted(target.items(), key=lambda item: item[1]):
        found = draft.get(token)
        if found != index:
            where = "missing from the draft" if found is None else f"draft id {found}"
            return f"first {token!r}: target id {index}, {where}"
    extra = sorted((index, token) for token, index in draft.items() if token not in target)
    return f"first {extra[0][1]!r}: draft id {extra[0][0]}, not in the target"


def tokenizer_differences(target: TokenizerFingerprint, draft: TokenizerFingerprint) -> list[str]:
    """Human-readable differences, most telling first; empty means the draft is safe to speculate with."""
    if target.kind != draft.kind:
        return [f"target tokenizer from {target.kind}, draft tokenizer from {draft.kind}"]
    differences: list[str] = []
    if target.vocab != draft.vocab:
        remapped = sum(1 for token, i in target.vocab.items() if draft.vocab.get(token, i) != i)
        missing = len(set(target.vocab) - set(draft.vocab))
        differences.append(
            f"vocabulary differs: target has {len(target.vocab)} tokens, draft "
            f"{len(draft.vocab)}; {missing} target tokens missing from the draft, "
            f"{remapped} mapped to different ids; "
            f"{_first_vocabulary_difference(target.vocab, draft.vocab)}"
        )
    if target.merges != draft.merges:
        sentencepiece = target.kind == "tokenizer.model"
        differences.append(
            "sentencepiece models differ" if sentencepiece else "BPE merges (or tokenizer model type) differ"
        )
    if target.added_tokens != draft.added_tokens:
        differences.append("added/special tokens differ")
    if target.pipeline != draft.pipeline:
        differences.append("normalizer or pre-tokenizer differs")
    if target.special_tokens != draft.special_tokens:
        differences.append(
            f"special tokens differ: target {dict(target.special_tokens)}, draft {dict(draft.special_tokens)}"
        )
    return differences


def check_draft_tokenizer(target: str | Path, draft: str | Path) -> None:
    """Raise ``EngineStartupRefused`` unless ``draft`` tokenizes exactly like ``target``.

    Both must be local model directories (a backend resolves hub ids to its
    cache first). Code ``draft_model_tokenizer_unverifiable`` when either
    tokenizer cannot be read, ``draft_model_tokenizer_mismatch`` naming every
    difference, the first one first, when they differ.
    """
    fingerprints = {}
    for role, name in (("target", target), ("draft", draft)):
        found = tokenizer_fingerprint(Path(name)) if Path(name).is_dir() else None
        if found is None:
            raise EngineStartupRefused(
                UNVERIFIABLE_CODE,
                f"cannot verify the draft tokenizer: {role} model {str(name)!r} is not a local "
                f"directory with {_TOKENIZER_FILES}",
            )
        fingerprints[role] = found
    differences = tokenizer_differences(fingerprints["target"], fingerprints["draft"])
    if differences:
        raise EngineStartupRefused(
            MISMATCH_CODE,
            f"draft model {str(draft)!r} does not share the tokenizer of target {str(target)!r}: "
            + "; ".join(differences),
        )
