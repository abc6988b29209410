"""The pre-boot tokenizer check, on the tiny checkpoints: stricter than vLLM's vocab_size check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_specgate.engines.protocol import EngineStartupRefused
from pytest_specgate.engines.vllm.tokenizer_match import (
    MISMATCH_CODE,
    UNVERIFIABLE_CODE,
    check_draft_tokenizer,
    tokenizer_differences,
    tokenizer_fingerprint,
)
from pytest_specgate.models import TinyModelPair, tiny_model_pair


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> TinyModelPair:
    return tiny_model_pair(tmp_path_factory.mktemp("tiny-models"))


@pytest.mark.parametrize("role", ["draft", "copy"])
def test_drafts_cut_from_the_target_pass(pair: TinyModelPair, role: str) -> None:
    check_draft_tokenizer(str(pair.target), str(pair.path_for(role)))


def test_a_different_vocabulary_is_refused_with_the_sizes(pair: TinyModelPair) -> None:
    with pytest.raises(EngineStartupRefused) as caught:
        check_draft_tokenizer(str(pair.target), str(pair.mismatched_draft))

    assert caught.value.code == MISMATCH_CODE
    assert str(pair.mismatched_draft) in caught.value.message
    assert "target has 512 tokens, draft 384" in caught.value.message


def test_same_size_but_other_ids_is_refused_which_vllm_itself_lets_through(pair: TinyModelPair) -> None:
    target_config = json.loads((pair.target / "config.json").read_text())
    permuted_config = json.loads((pair.permuted_draft / "config.json").read_text())
    assert target_config["vocab_size"] == permuted_config["vocab_size"]

    with pytest.raises(EngineStartupRefused) as caught:
        check_draft_tokenizer(str(pair.target), str(pair.permuted_draft))

    assert caught.value.code == MISMATCH_CODE
    assert "0 target tokens missing from the draft" in caught.value.message
    assert "mapped to different ids" in caught.value.message


def test_a_different_eos_token_is_refused(pair: TinyModelPair, tmp_path: Path) -> None:
    draft = tmp_path / "draft"
    shutil.copytree(pair.draft, draft)
    config_path = draft / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["eos_token"] = "<|other_end|>"
    config_path.write_text(json.dumps(config))

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

    check_draft_tokenizer(str(tmp_path / "a"), str(tmp_path / "a"))
    with pytest.raises(EngineStartupRefused, match="2 mapped to different ids"):
        check_draft_tokenizer(str(tmp_path / "a"), str(tmp_path / "b"))


def test_a_draft_that_cannot_be_read_is_refused_not_trusted(pair: TinyModelPair, tmp_path: Path) -> None:
    with pytest.raises(EngineStartupRefused) as caught:
        check_draft_tokenizer(str(pair.target), "Qwen/Qwen2.5-0.5B-Instruct")

    assert caught.value.code == UNVERIFIABLE_CODE
    assert "draft model 'Qwen/Qwen2.5-0.5B-Instruct' is not a local directory" in caught.value.message

    with pytest.raises(EngineStartupRefused, match="target model") as empty:
        check_draft_tokenizer(str(tmp_path), str(pair.draft))
    assert empty.value.code == UNVERIFIABLE_CODE
