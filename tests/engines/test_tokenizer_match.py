"""The shared pre-boot tokenizer check (mlx and vllm backends), on the tiny checkpoints.

It is stricter than vLLM's and mlx-lm's own checks, which compare only vocabulary sizes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_specgate.contracts.engine import EngineStartupRefused
from pytest_specgate.engines.tokenizer_match import (
    MISMATCH_CODE,
    UNVERIFIABLE_CODE,
    check_draft_tokenizer,
    tokenizer_differences,
    tokenizer_fingerprint,
)
from pytest_specgate.fetching.tiny_models import TinyModelPair, tiny_model_pair


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> TinyModelPair:
    return tiny_model_pair(tmp_path_factory.mktemp("tiny-models"))


def _edited_draft(pair: TinyModelPair, tmp_path: Path, name: str) -> tuple[Path, dict[str, object]]:
    draft = tmp_path / "draft"
    shutil.copytree(pair.draft, draft)
    return draft, json.loads((draft / name).read_text(encoding="utf-8"))


def _refusal(target: str | Path, draft: str | Path) -> EngineStartupRefused:
    with pytest.raises(EngineStartupRefused) as caught:
        check_draft_tokenizer(target, draft)
    return caught.value


@pytest.mark.parametrize("role", ["draft", "copy"])
def test_drafts_cut_from_the_target_pass(pair: TinyModelPair, role: str) -> None:
    check_draft_tokenizer(pair.target, pair.path_for(role))
    check_draft_tokenizer(str(pair.target), str(pair.path_for(role)))


def test_a_different_vocabulary_is_refused_naming_both_models_and_sizes(pair: TinyModelPair) -> None:
    refused = _refusal(pair.target, pair.mismatched_draft)

    assert refused.code == MISMATCH_CODE
    assert str(pair.mismatched_draft) in refused.message and str(pair.target) in refused.message
    assert "target has 512 tokens, draft 384" in refused.message


def test_same_size_but_other_ids_is_refused_naming_the_first_moved_token(pair: TinyModelPair) -> None:
    target_config = json.loads((pair.target / "config.json").read_text())
    permuted_config = json.loads((pair.permuted_draft / "config.json").read_text())
    assert target_config["vocab_size"] == permuted_config["vocab_size"]

    refused = _refusal(pair.target, pair.permuted_draft)

    assert refused.code == MISMATCH_CODE
    assert "0 target tokens missing from the draft" in refused.message
    assert "mapped to different ids" in refused.message
    target_print = tokenizer_fingerprint(pair.target)
    permuted_print = tokenizer_fingerprint(pair.permuted_draft)
    assert target_print is not None and permuted_print is not None
    first = min(
        (index, token)
        for token, index in target_print.vocab.items()
        if permuted_print.vocab[token] != index
    )
    assert (
        f"first {first[1]!r}: target id {first[0]}, draft id {permuted_print.vocab[first[1]]}"
        in refused.message
    )


def test_a_draft_with_extra_tokens_names_the_first_one(tmp_path: Path) -> None:
    for name, vocab in (("a", {"x": 0, "y": 1}), ("b", {"x": 0, "y": 1, "z": 2})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "vocab.json").write_text(json.dumps(vocab))

    refused = _refusal(tmp_path / "a", tmp_path / "b")
    assert "0 target tokens missing from the draft, 0 mapped to different ids" in refused.message
    assert "first 'z': draft id 2, not in the target" in refused.message


def test_different_merges_with_same_ids_are_refused(pair: TinyModelPair, tmp_path: Path) -> None:
    draft, tokenizer = _edited_draft(pair, tmp_path, "tokenizer.json")
    model = tokenizer["model"]
    assert isinstance(model, dict)
    model["merges"] = model["merges"][:-1]
    (draft / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")

    refused = _refusal(pair.target, draft)
    assert refused.code == MISMATCH_CODE
    assert refused.message.endswith(": BPE merges (or tokenizer model type) differ")


def test_a_different_eos_token_is_refused(pair: TinyModelPair, tmp_path: Path) -> None:
    draft, config = _edited_draft(pair, tmp_path, "tokenizer_config.json")
    config["eos_token"] = "<|other_end|>"
    (draft / "tokenizer_config.json").write_text(json.dumps(config))

    target_print = tokenizer_fingerprint(pair.target)
    draft_print = tokenizer_fingerprint(draft)
    assert target_print is not None and draft_print is not None
    assert [d.split(":")[0] for d in tokenizer_differences(target_print, draft_print)] == [
        "special tokens differ"
    ]


def test_vocab_json_and_merges_are_read_when_there_is_no_tokenizer_json(tmp_path: Path) -> None:
    for name, vocab in (("a", {"x": 0, "y": 1}), ("b", {"x": 1, "y": 0})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "vocab.json").write_text(json.dumps(vocab))
        (tmp_path / name / "merges.txt").write_text("#version: 0.2\nx y\n")

    check_draft_tokenizer(tmp_path / "a", tmp_path / "a")
    with pytest.raises(EngineStartupRefused, match="2 mapped to different ids"):
        check_draft_tokenizer(tmp_path / "a", tmp_path / "b")


def test_sentencepiece_models_are_compared_by_content(tmp_path: Path) -> None:
    for name, content in (("a", b"\x0a\x03abc"), ("same", b"\x0a\x03abc"), ("other", b"\x0a\x03abd")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tokenizer.model").write_bytes(content)

    check_draft_tokenizer(tmp_path / "a", tmp_path / "same")
    refused = _refusal(tmp_path / "a", tmp_path / "other")
    assert refused.code == MISMATCH_CODE
    assert refused.message.endswith(": sentencepiece models differ")


def test_tokenizers_from_different_kinds_of_files_are_refused(pair: TinyModelPair, tmp_path: Path) -> None:
    (tmp_path / "spm").mkdir()
    (tmp_path / "spm" / "tokenizer.model").write_bytes(b"\x0a\x03abc")

    refused = _refusal(pair.target, tmp_path / "spm")
    assert refused.code == MISMATCH_CODE
    assert "target tokenizer from tokenizer.json, draft tokenizer from tokenizer.model" in refused.message


def test_a_draft_that_cannot_be_read_is_refused_not_trusted(pair: TinyModelPair, tmp_path: Path) -> None:
    remote = _refusal(pair.target, "Qwen/Qwen2.5-0.5B-Instruct")
    assert remote.code == UNVERIFIABLE_CODE
    assert "draft model 'Qwen/Qwen2.5-0.5B-Instruct' is not a local directory" in remote.message

    bare = tmp_path / "bare"
    shutil.copytree(pair.draft, bare)
    (bare / "tokenizer.json").unlink()
    assert tokenizer_fingerprint(bare) is None
    without_files = _refusal(pair.target, bare)
    assert without_files.code == UNVERIFIABLE_CODE
    assert f"draft model {str(bare)!r}" in without_files.message
    assert "tokenizer.json, tokenizer.model or vocab.json" in without_files.message

    empty_target = _refusal(tmp_path / "nothing-here", pair.draft)
    assert empty_target.code == UNVERIFIABLE_CODE and "target model" in empty_target.message
