"""The tiny model builder: deterministic bytes, the five roles, and loading in a real engine."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_specgate.contracts.progress import StepProgress, reporting_progress
from pytest_specgate.fetching.tiny_models import (
    LOCAL_PAIR_SPEC,
    TINY_MODEL_ROLES,
    TinyModelPair,
    TinyModelSpec,
    build_key,
    eos_chains,
    resolve_model_ref,
    tiny_model_pair,
    weights_digest,
)
from pytest_specgate.measure.progress import ProgressReporter


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> TinyModelPair:
    return tiny_model_pair(tmp_path_factory.mktemp("tiny-cache"))


def _file_digests(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _json(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _tensors(model_dir: Path) -> dict[str, bytes]:
    from safetensors.numpy import load_file

    return {name: array.tobytes() for name, array in load_file(model_dir / "model.safetensors").items()}


def test_two_builds_produce_the_same_bytes(pair: TinyModelPair, tmp_path: Path) -> None:
    again = tiny_model_pair(tmp_path)
    first, second = _file_digests(pair.root), _file_digests(again.root)
    assert len(first) == 6 * len(TINY_MODEL_ROLES)
    assert first == second
    assert pair.root.name == again.root.name


def test_a_build_reports_elapsed_time_between_its_stages(tmp_path: Path) -> None:
    stream = io.StringIO()
    ticks = itertools.count(0.0, 2.0)

    def factory(label: str, planned_s: float | None) -> StepProgress:
        return ProgressReporter(stream, label=label, planned_s=planned_s, clock=lambda: next(ticks),
                                min_interval_s=0.0)

    with reporting_progress(factory):
        tiny_model_pair(tmp_path)
        tiny_model_pair(tmp_path)  # built already: no step, no lines

    assert stream.getvalue().splitlines() == [
        "tiny model build: 4s elapsed",
        "tiny model build: 6s elapsed",
        "tiny model build: 8s elapsed",
        "tiny model build: 10s elapsed",
        "tiny model build: 12s elapsed",
        "tiny model build: done in 14s",
    ]


def test_a_second_call_reuses_the_build_and_leaves_no_staging(pair: TinyModelPair) -> None:
    weights = pair.target / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert tiny_model_pair(pair.root.parent) == pair
    assert weights.stat().st_mtime_ns == before
    assert [p.name for p in pair.root.parent.iterdir()] == [pair.root.name]


def test_build_key_follows_the_spec() -> None:
    spec = TinyModelSpec()
    assert build_key(spec) == build_key(TinyModelSpec())
    assert build_key(spec) != build_key(replace(spec, seed=spec.seed + 1))
    assert build_key(spec) != build_key(replace(spec, num_hidden_layers=3))


def test_draft_is_the_first_target_layer_with_shared_embeddings(pair: TinyModelPair) -> None:
    target, draft = _tensors(pair.target), _tensors(pair.draft)
    assert _json(pair.target / "config.json")["num_hidden_layers"] == 2
    assert _json(pair.draft / "config.json")["num_hidden_layers"] == 1
    assert not any(name.startswith("model.layers.1.") for name in draft)
    assert all(target[name] == draft[name] for name in draft)
    assert set(target) - set(draft) == {n for n in target if n.startswith("model.layers.1.")}
    assert (pair.draft / "tokenizer.json").read_bytes() == (pair.target / "tokenizer.json").read_bytes()


def test_copy_is_identical_to_the_target(pair: TinyModelPair) -> None:
    assert _file_digests(pair.identical_draft) == _file_digests(pair.target)
    assert weights_digest(pair.identical_draft) == weights_digest(pair.target)
    assert weights_digest(pair.draft) != weights_digest(pair.target)


def test_mismatched_draft_has_another_vocabulary(pair: TinyModelPair) -> None:
    target_vocab = _json(pair.target / "tokenizer.json")["model"]
    mismatch_vocab = _json(pair.mismatched_draft / "tokenizer.json")["model"]
    assert isinstance(target_vocab, dict) and isinstance(mismatch_vocab, dict)
    assert len(mismatch_vocab["vocab"]) == 384 != len(target_vocab["vocab"]) == 512
    assert _json(pair.mismatched_draft / "config.json")["vocab_size"] == 384


def test_permuted_draft_keeps_size_and_tokens_but_not_ids(pair: TinyModelPair) -> None:
    target = _json(pair.target / "tokenizer.json")["model"]
    permuted = _json(pair.permuted_draft / "tokenizer.json")["model"]
    assert isinstance(target, dict) and isinstance(permuted, dict)
    target_vocab, permuted_vocab = target["vocab"], permuted["vocab"]
    assert set(target_vocab) == set(permuted_vocab)
    assert _json(pair.permuted_draft / "config.json")["vocab_size"] == 512
    moved = [token for token in target_vocab if target_vocab[token] != permuted_vocab[token]]
    assert len(moved) > 400
    assert all(target_vocab[t] == permuted_vocab[t] for t in ("<s>", "<|im_end|>"))


def test_config_has_what_vllm_and_mlx_expect(pair: TinyModelPair) -> None:
    config = _json(pair.target / "config.json")
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["model_type"] == "llama"
    max_positions = config["max_position_embeddings"]
    assert isinstance(max_positions, int) and max_positions >= 512
    tokenizer_config = _json(pair.target / "tokenizer_config.json")
    assert "add_generation_prompt" in str(tokenizer_config["chat_template"])
    assert tokenizer_config["eos_token"] == "<|im_end|>"
    vocab = _json(pair.target / "tokenizer.json")["model"]
    assert isinstance(vocab, dict)
    assert vocab["vocab"]["<|im_end|>"] == config["eos_token_id"]
    assert vocab["vocab"]["<s>"] == config["bos_token_id"]
    names = set(_tensors(pair.target))
    assert {"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight"} <= names


def test_resolve_model_ref(pair: TinyModelPair) -> None:
    cache = pair.root.parent
    for role in TINY_MODEL_ROLES:
        assert resolve_model_ref(f"tiny:{role}", cache) == str(pair.path_for(role))
    assert resolve_model_ref("mlx-community/Qwen3-0.6B", cache) == "mlx-community/Qwen3-0.6B"
    with pytest.raises(ValueError, match=r"'tiny:huge'.*unknown tiny model role 'huge'"):
        resolve_model_ref("tiny:huge", cache)


def test_tokenizer_round_trips_and_applies_the_chat_template(pair: TinyModelPair) -> None:
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(pair.target))
    text = "The lighthouse keeper counted 112 steps."
    assert tokenizer.decode(tokenizer.encode(text)) == text
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False
    )
    assert prompt == "<s><|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_mlx_greedy_speculative_output_equals_baseline(pair: TinyModelPair) -> None:
    mlx_lm = pytest.importorskip("mlx_lm")
    model, tokenizer = mlx_lm.load(str(pair.target))
    draft, _ = mlx_lm.load(str(pair.draft))
    copy, _ = mlx_lm.load(str(pair.identical_draft))
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Tell me about the garden."}], add_generation_prompt=True
    )
    baseline = [r.token for r in mlx_lm.stream_generate(model, tokenizer, prompt, max_tokens=40)]
    assert len(baseline) == 40

    def speculative(draft_model: object) -> tuple[list[int], int]:
        steps = list(
            mlx_lm.stream_generate(
                model, tokenizer, prompt, max_tokens=40, draft_model=draft_model, num_draft_tokens=3
            )
        )
        return [r.token for r in steps], sum(r.from_draft for r in steps)

    draft_tokens, draft_accepted = speculative(draft)
    copy_tokens, copy_accepted = speculative(copy)
    assert draft_tokens == baseline
    assert copy_tokens == baseline
    assert 0 < draft_accepted < copy_accepted
    assert copy_accepted == 30


def test_concurrent_builds_into_one_cache_agree(tmp_path: Path) -> None:
    """xdist workers may share a cache directory: the rename makes one build win whole."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=2) as pool:
        roots = list(pool.map(_build_root, [tmp_path, tmp_path]))
    assert roots[0] == roots[1]
    assert [p.name for p in tmp_path.iterdir()] == [Path(roots[0]).name]
    assert len(_file_digests(Path(roots[0]))) == 6 * len(TINY_MODEL_ROLES)


def _build_root(cache: Path) -> str:
    return str(tiny_model_pair(cache).root)


def test_eos_chains_lead_every_token_to_eos_within_the_chain_length() -> None:
    successor = eos_chains(range(40), eos_id=4, length=7, seed=3)
    assert set(successor) == set(range(40)) - {4}
    assert sorted(successor.values()).count(4) == 6  # ceil(39 / 7) chains, each ends in EOS
    for start in successor:
        token, steps = start, 0
        while token != 4:
            token, steps = successor[token], steps + 1
        assert steps <= 7


def _bf16_tensors(model_dir: Path) -> dict[str, tuple[list[int], bytes]]:
    """Shape and raw bytes per tensor of a bf16 safetensors file (numpy cannot load bf16)."""
    raw = (model_dir / "model.safetensors").read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    data = raw[8 + size :]
    header.pop("__metadata__")
    assert {entry["dtype"] for entry in header.values()} == {"BF16"}
    return {name: (entry["shape"], data[slice(*entry["data_offsets"])]) for name, entry in header.items()}


def test_bf16_storage_rounds_to_nearest_even() -> None:
    np = pytest.importorskip("numpy")
    from pytest_specgate.fetching.tiny_models import _safetensors_bytes

    values = np.array([1.0, 1.0 + 2**-8 + 2**-12, 1.0 + 2**-8, -2.5, 3.0e-3], dtype=np.float32)
    raw = _safetensors_bytes({"w": values}, "bfloat16")
    size = int.from_bytes(raw[:8], "little")
    assert size % 8 == 0
    stored = np.frombuffer(raw[8 + size :], dtype="<u2").astype(np.uint32) << 16
    decoded = stored.view(np.float32)
    # 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
    assert decoded.tolist()[:4] == [1.0, 1.0 + 2**-7, 1.0, -2.5]
    assert abs(decoded[4] - 3.0e-3) < 3.0e-3 * 2**-8
    with pytest.raises(ValueError, match="tiny model dtype 'int8'"):
        _safetensors_bytes({"w": values}, "int8")


@pytest.fixture(scope="module")
def local_pair(tmp_path_factory: pytest.TempPathFactory) -> TinyModelPair:
    return tiny_model_pair(tmp_path_factory.mktemp("local-pair"), LOCAL_PAIR_SPEC)


def test_local_pair_is_a_deep_bf16_target_and_its_first_layer(local_pair: TinyModelPair) -> None:
    target, draft = _bf16_tensors(local_pair.target), _bf16_tensors(local_pair.draft)
    target_config = _json(local_pair.target / "config.json")
    draft_config = _json(local_pair.draft / "config.json")
    assert (target_config["num_hidden_layers"], draft_config["num_hidden_layers"]) == (16, 1)
    assert target_config["hidden_size"] == 512 and target_config["torch_dtype"] == "bfloat16"
    assert all(target[name] == draft[name] for name in draft)
    assert {"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight"} <= set(draft)
    size = lambda model: (model / "model.safetensors").stat().st_size  # noqa: E731
    assert size(local_pair.draft) * 10 < size(local_pair.target)
    assert resolve_model_ref("local-pair:draft", local_pair.root.parent) == str(local_pair.draft)
    with pytest.raises(ValueError, match=r"'local-pair:huge'.*expected one of \['local-pair:target'"):
        resolve_model_ref("local-pair:huge", local_pair.root.parent)


def test_local_pair_draft_agrees_with_the_target_and_answers_end(local_pair: TinyModelPair) -> None:
    """The target's greedy choice along the draft's answer: the draft is right >= 90% of the time.

    One forward pass of each model over the draft's greedy answer (no slow target
    decoding): the answer must end in EOS within a few hundred tokens, and the
    target must choose EOS there too, so the EOS gate can run on the pair.
    """
    mx = pytest.importorskip("mlx.core")
    mlx_lm = pytest.importorskip("mlx_lm")
    model, tokenizer = mlx_lm.load(str(local_pair.target))
    draft, _ = mlx_lm.load(str(local_pair.draft))
    eos = tokenizer.eos_token_id
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Tell me about the garden."}], add_generation_prompt=True
    )
    answer = [r.token for r in mlx_lm.stream_generate(draft, tokenizer, prompt, max_tokens=400)]
    assert answer[-1] == eos and len(answer) < 300
    sequence = mx.array([prompt + answer])
    target_choice = model(sequence)[0].argmax(-1).tolist()[len(prompt) - 1 : -1]
    agreeing = sum(t == d for t, d in zip(target_choice, answer, strict=True))
    assert agreeing >= 0.9 * len(answer), (agreeing, len(answer))
    assert target_choice[-1] == eos
