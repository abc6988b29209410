"""Tiny random Llama checkpoints, built offline and deterministically, for real-engine specs.

No weights can be downloaded in CI, yet the specs must boot real engines (mlx-lm,
vLLM). A few hundred kilobytes of random weights in the standard Llama layout,
with a byte-level BPE tokenizer trained on a fixed corpus, are enough for an
engine to load, serve and speculate; being random does not matter because the
specs compare an engine against itself (speculative versus baseline greedy
output), never against a reference text.

One build yields five checkpoint directories (the *roles*):

``target``    the model being served (2 layers; 16 in the local pair).
``draft``     the target cut to its first layer, sharing embeddings, final norm
              and output head: it agrees with the target often but not always.
``copy``      a byte-identical copy of the target: acceptance must be 1.0.
``mismatch``  a draft with a different vocabulary (another tokenizer, another
              vocabulary size): engines must refuse it.
``permuted``  a draft whose tokenizer has the target's size and tokens but other
              ids: only a check that compares the vocabularies, not their sizes,
              catches it.

Two families are built from the same code:

``tiny:<role>``        2 layers, hidden 64: boots in seconds, made for functional
                       specs (identity, refusals), too small for a real speedup.
``local-pair:<role>``  the *local speculative pair* (:data:`LOCAL_PAIR_SPEC`): a
                       16-layer, hidden-512 bf16 target whose layers after the
                       first barely change its greedy choice, so its one-layer
                       draft is accepted most of the time and costs about a
                       sixteenth of a target step. Real CPU engines speed up on
                       it, and its answers end (EOS) within a few hundred tokens.

Specs name them as ``"<family>:<role>"`` (e.g. ``target="tiny:target"``,
``draft="local-pair:draft"``); backends turn such a reference into a local path
with :func:`resolve_model_ref`. Builds are keyed by a hash of everything that
goes into them, so a cache directory can be shared between sessions and xdist
workers.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_specgate.contracts.progress import StepProgress, progress_for

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "LOCAL_PAIR_SPEC",
    "MODEL_FAMILIES",
    "TINY_MODEL_ROLES",
    "TINY_REF_PREFIX",
    "TinyModelPair",
    "TinyModelSpec",
    "build_key",
    "eos_chains",
    "is_tiny_ref",
    "resolve_model_ref",
    "tiny_model_pair",
    "weights_digest",
]

TINY_REF_PREFIX = "tiny:"
_PAIR_FIELD_OF_ROLE = {
    "target": "target",
    "draft": "draft",
    "copy": "identical_draft",
    "mismatch": "mismatched_draft",
    "permuted": "permuted_draft",
}
TINY_MODEL_ROLES = tuple(_PAIR_FIELD_OF_ROLE)
BUILDER_VERSION = 2
_SAFETENSORS_DTYPES = {"float32": "F32", "bfloat16": "BF16"}

BOS_TOKEN = "<s>"
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<pad>"
SPECIAL_TOKENS = (BOS_TOKEN, "</s>", PAD_TOKEN, "<|im_start|>", EOS_TOKEN)

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

CORPUS = """\
The lighthouse keeper wrote the weather in a small book every evening at six.
Wind from the north, clear sky, the sea calm and grey; a ship passed at noon.
She counted the steps to the lamp room: one hundred and twelve, never more.
In spring the gulls came back and nested on the ledge below the window.
The supply boat arrived on Tuesdays with bread, oil, letters and newspapers.
Her brother sent postcards from the city, where the trains ran all night long.
A model that drafts tokens ahead lets a larger model check them all at once.
When the draft guesses right, several tokens are accepted in a single step.
When it guesses wrong, the larger model keeps its own token and drafting restarts.
Greedy decoding picks the most likely token each time, so the output is fixed.
Speculative decoding must never change what greedy decoding would have written.
The test runner boots a server, sends a prompt, reads the answer and stops it.
Every server listens on a local port and writes its log to a file nearby.
A release manager reads the evidence, checks the digest and merges the change.
Numbers without a source are not evidence; a missing counter is reported as missing.
The garden had three rows of beans, two of onions and one of tall sunflowers.
On Sunday the market opened early and the baker sold out before nine o'clock.
Rain fell softly on the roof while the children played cards by the stove.
The old clock in the hall struck eleven, then twelve, then stopped for good.
A river runs through the valley, past the mill, under the stone bridge and on.
Measure twice, cut once, and write down what you measured before you forget.
If the tokenizer of the draft differs from the target, its guesses mean nothing.
The quick brown fox jumps over the lazy dog; the lazy dog does not seem to mind.
Four hundred and twenty people attended the concert in the park that summer.
Reading, writing and arithmetic were taught in the single room of the school.
The engine started, warmed up, served its requests and shut down cleanly.
Always close what you open, release what you hold and leave the port free.
"""

MISMATCH_CORPUS = CORPUS.upper()


@dataclass(frozen=True)
class TinyModelSpec:
    """Architecture and seeds of the tiny target; every field enters the build key.

    ``residual_scale`` shrinks the output projections of every layer so that the
    first layer dominates and a one-layer draft agrees with the target often but
    not always (high but imperfect acceptance); ``later_layer_scale`` shrinks
    those of the layers the draft does not have once more.

    ``eos_chain_length`` (None: off) makes answers end: the output head is given
    a second, ``eos_chain_strength``-weighted term that makes every token favour
    a successor along fixed chains of that many tokens, each ending in EOS (see
    :func:`eos_chains`). Because the term reads only the token's own embedding,
    which the draft shares, it moves the draft's choice exactly as the target's.
    """

    vocab_size: int = 512
    mismatch_vocab_size: int = 384
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    draft_layers: int = 1
    num_attention_heads: int = 2
    num_key_value_heads: int = 2
    max_position_embeddings: int = 2048
    residual_scale: float = 0.2
    later_layer_scale: float = 1.0
    eos_chain_length: int | None = None
    eos_chain_strength: float = 0.0
    dtype: str = "float32"
    seed: int = 20240601


LOCAL_PAIR_SPEC = TinyModelSpec(
    hidden_size=512,
    intermediate_size=1536,
    num_hidden_layers=16,
    num_attention_heads=8,
    num_key_value_heads=8,
    later_layer_scale=0.25,
    eos_chain_length=128,
    eos_chain_strength=5.0,
    dtype="bfloat16",
)
"""The local speculative pair: ~110 MB target, ~8 MB draft, built in a few seconds.

bf16 because the Linux mlx CPU build's fp32 matmul cost grows with the number of
tokens verified at once, which eats the gain; with bf16 a five-token verify
costs about two single steps.
"""

MODEL_FAMILIES: dict[str, TinyModelSpec] = {"tiny": TinyModelSpec(), "local-pair": LOCAL_PAIR_SPEC}
"""``<family>:<role>`` model references and the spec each family is built from."""


@dataclass(frozen=True)
class TinyModelPair:
    """Paths of one build; ``root`` is the content-addressed build directory."""

    root: Path
    target: Path
    draft: Path
    identical_draft: Path
    mismatched_draft: Path
    permuted_draft: Path

    def path_for(self, role: str) -> Path:
        """The checkpoint directory of a role named as in :data:`TINY_MODEL_ROLES`."""
        if role not in _PAIR_FIELD_OF_ROLE:
            raise ValueError(
                f"unknown tiny model role {role!r}; expected one of {list(TINY_MODEL_ROLES)}"
            )
        path: Path = getattr(self, _PAIR_FIELD_OF_ROLE[role])
        return path


def _split_ref(ref: str) -> tuple[str, str] | None:
    family, sep, role = ref.partition(":")
    return (family, role) if sep and family in MODEL_FAMILIES else None


def is_tiny_ref(ref: str | None) -> bool:
    """True for references to a built model family, ``<family>:<role>`` (e.g. ``tiny:draft``)."""
    return ref is not None and _split_ref(ref) is not None


def resolve_model_ref(ref: str, cache_dir: Path, spec: TinyModelSpec | None = None) -> str:
    """A local path for ``<family>:<role>`` (building the family if needed); other refs unchanged.

    ``spec`` replaces the family's own spec (tests build variants this way).
    """
    split = _split_ref(ref)
    if split is None:
        return ref
    family, role = split
    if role not in TINY_MODEL_ROLES:
        raise ValueError(
            f"model reference {ref!r}: unknown tiny model role {role!r}; "
            f"expected one of {[f'{family}:{r}' for r in TINY_MODEL_ROLES]}"
        )
    return str(tiny_model_pair(cache_dir, spec or MODEL_FAMILIES[family]).path_for(role))


def build_key(spec: TinyModelSpec) -> str:
    """Hash of every input of a build, including the tokenizers version (training may change)."""
    import tokenizers

    material = {
        "builder_version": BUILDER_VERSION,
        "spec": asdict(spec),
        "corpus": hashlib.sha256(CORPUS.encode()).hexdigest(),
        "mismatch_corpus": hashlib.sha256(MISMATCH_CORPUS.encode()).hexdigest(),
        "chat_template": CHAT_TEMPLATE,
        "special_tokens": SPECIAL_TOKENS,
        "tokenizers": tokenizers.__version__,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def tiny_model_pair(cache_dir: Path, spec: TinyModelSpec | None = None) -> TinyModelPair:
    """Build (once per content hash) and return the tiny checkpoints under ``cache_dir``.

    The build happens in a private staging directory that is renamed into place,
    so concurrent callers (xdist workers) never see a half-written checkpoint.
    """
    spec = spec or TinyModelSpec()
    root = Path(cache_dir) / f"tiny-llama-{build_key(spec)[:16]}"
    if not root.is_dir():
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root.parent))
        step = progress_for("tiny model build")
        try:
            _build_all(staging, spec, step)
            if step is not None:
                step.tick(done=True)
            staging.chmod(0o755)
            try:
                os.rename(staging, root)
            except OSError:
                if not root.is_dir():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return _pair_at(root)


def eos_chains(token_ids: Sequence[int], eos_id: int, length: int, seed: int) -> dict[int, int]:
    """Each token's successor along shuffled chains of ``length`` tokens that end in EOS.

    Every token but EOS lies on exactly one chain, so a walk that follows the
    chains from any token reaches EOS within ``length`` steps, and one that
    leaves a chain (the random part of the head won) lands on another chain
    that also ends in EOS.
    """
    import numpy as np

    order = [token_ids[i] for i in np.random.default_rng(seed).permutation(len(token_ids))]
    order = [token for token in order if token != eos_id]
    successor: dict[int, int] = {}
    for start in range(0, len(order), length):
        chain = [*order[start : start + length], eos_id]
        successor.update(itertools.pairwise(chain))
    return successor


def weights_digest(model_dir: Path) -> str:
    """sha256 over the safetensors files of a checkpoint (name and bytes), for evidence."""
    digest = hashlib.sha256()
    for path in sorted(Path(model_dir).glob("*.safetensors")):
        digest.update(path.name.encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _pair_at(root: Path) -> TinyModelPair:
    """The checkpoint of each role lives in ``root/<role>``."""
    return TinyModelPair(
        root=root, **{field: root / role for role, field in _PAIR_FIELD_OF_ROLE.items()}
    )


def _build_all(root: Path, spec: TinyModelSpec, step: StepProgress | None) -> None:
    """Tokenizers, weights, then five checkpoints; ``step`` hears of each stage's end, so a
    slow build shows elapsed-time lines between stages."""

    def tick() -> None:
        if step is not None:
            step.tick()

    tokenizer_json = _train_tokenizer(CORPUS, spec.vocab_size)
    mismatch_json = _train_tokenizer(MISMATCH_CORPUS, spec.mismatch_vocab_size)
    permuted_json = _permute_vocabulary(tokenizer_json, spec.seed)
    tick()
    target = _random_llama_weights(spec, spec.vocab_size, spec.num_hidden_layers, spec.seed)
    if spec.eos_chain_length is not None:
        _add_eos_chains(target, spec)
    draft = _first_layers(target, spec.draft_layers)
    mismatch = _random_llama_weights(
        spec, spec.mismatch_vocab_size, spec.draft_layers, spec.seed + 1
    )
    tick()
    pair = _pair_at(root)
    layers = spec.num_hidden_layers
    _write_checkpoint(pair.target, spec, spec.vocab_size, layers, target, tokenizer_json)
    tick()
    _write_checkpoint(pair.identical_draft, spec, spec.vocab_size, layers, target, tokenizer_json)
    tick()
    small = spec.draft_layers
    _write_checkpoint(pair.draft, spec, spec.vocab_size, small, draft, tokenizer_json)
    tick()
    _write_checkpoint(pair.permuted_draft, spec, spec.vocab_size, small, draft, permuted_json)
    tick()
    _write_checkpoint(
        pair.mismatched_draft, spec, spec.mismatch_vocab_size, small, mismatch, mismatch_json
    )


def _train_tokenizer(corpus: str, vocab_size: int) -> str:
    """A byte-level BPE tokenizer.json (the GPT-2/Llama-3 family) trained on ``corpus``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus.splitlines(keepends=True), trainer=trainer)
    if tokenizer.get_vocab_size() != vocab_size:
        raise RuntimeError(
            f"tiny tokenizer: expected a vocabulary of {vocab_size} tokens, the corpus "
            f"yielded {tokenizer.get_vocab_size()}"
        )
    return _canonical_json(json.loads(tokenizer.to_str()))


def _permute_vocabulary(tokenizer_json: str, seed: int) -> str:
    """The same tokens and merges with the non-special ids shuffled (same vocabulary size)."""
    import numpy as np

    data = json.loads(tokenizer_json)
    vocab: dict[str, int] = data["model"]["vocab"]
    special = set(SPECIAL_TOKENS)
    movable = sorted((token for token in vocab if token not in special), key=vocab.__getitem__)
    ids = [vocab[token] for token in movable]
    shuffled = np.random.default_rng(seed).permutation(len(ids)).tolist()
    for token, index in zip(movable, shuffled, strict=True):
        vocab[token] = ids[index]
    data["model"]["vocab"] = dict(sorted(vocab.items(), key=lambda item: item[1]))
    return _canonical_json(data)


def _random_llama_weights(
    spec: TinyModelSpec, vocab_size: int, num_layers: int, seed: int
) -> dict[str, npt.NDArray[np.float32]]:
    """Weights under the Hugging Face Llama names that mlx-lm and vLLM both load."""
    import numpy as np

    rng = np.random.default_rng(seed)
    hidden = spec.hidden_size
    head_dim = hidden // spec.num_attention_heads
    kv_width = spec.num_key_value_heads * head_dim

    def normal(shape: tuple[int, int], std: float) -> npt.NDArray[np.float32]:
        return rng.normal(0.0, std, size=shape).astype(np.float32)

    weights = {"model.embed_tokens.weight": normal((vocab_size, hidden), 1.0)}
    for layer in range(num_layers):
        prefix = f"model.layers.{layer}"
        scale = spec.residual_scale * (1.0 if layer < spec.draft_layers else spec.later_layer_scale)
        out_std = scale / np.sqrt(hidden)
        weights.update(
            {
                f"{prefix}.input_layernorm.weight": np.ones(hidden, dtype=np.float32),
                f"{prefix}.post_attention_layernorm.weight": np.ones(hidden, dtype=np.float32),
                f"{prefix}.self_attn.q_proj.weight": normal((hidden, hidden), hidden**-0.5),
                f"{prefix}.self_attn.k_proj.weight": normal((kv_width, hidden), hidden**-0.5),
                f"{prefix}.self_attn.v_proj.weight": normal((kv_width, hidden), hidden**-0.5),
                f"{prefix}.self_attn.o_proj.weight": normal((hidden, hidden), out_std),
                f"{prefix}.mlp.gate_proj.weight": normal(
                    (spec.intermediate_size, hidden), hidden**-0.5
                ),
                f"{prefix}.mlp.up_proj.weight": normal(
                    (spec.intermediate_size, hidden), hidden**-0.5
                ),
                f"{prefix}.mlp.down_proj.weight": normal(
                    (hidden, spec.intermediate_size), out_std
                ),
            }
        )
    weights["model.norm.weight"] = np.ones(hidden, dtype=np.float32)
    weights["lm_head.weight"] = normal((vocab_size, hidden), hidden**-0.5)
    return weights


def _add_eos_chains(weights: dict[str, npt.NDArray[np.float32]], spec: TinyModelSpec) -> None:
    """Add the chain term to the head: ``strength`` logits for each token's chain successor.

    The final hidden state is close to the current token's embedding ``e`` (the
    layers add small residuals), and its RMS norm is ``sqrt(hidden) * e/|e|``;
    a head row ``strength * e/(|e| sqrt(hidden))`` therefore scores about
    ``strength`` there and about 0 for other tokens (random directions).
    """
    import numpy as np

    assert spec.eos_chain_length is not None
    embeddings = weights["model.embed_tokens.weight"]
    head = weights["lm_head.weight"]
    eos_id = SPECIAL_TOKENS.index(EOS_TOKEN)
    successor = eos_chains(range(spec.vocab_size), eos_id, spec.eos_chain_length, spec.seed + 2)
    for token, following in successor.items():
        direction = embeddings[token] / (np.linalg.norm(embeddings[token]) * np.sqrt(spec.hidden_size))
        head[following] += (spec.eos_chain_strength * direction).astype(np.float32)


def _first_layers(
    weights: dict[str, npt.NDArray[np.float32]], num_layers: int
) -> dict[str, npt.NDArray[np.float32]]:
    """The target truncated to its first layers; embeddings, norm and head are shared."""
    kept_prefixes = tuple(f"model.layers.{layer}." for layer in range(num_layers))
    return {
        name: array
        for name, array in weights.items()
        if not name.startswith("model.layers.") or name.startswith(kept_prefixes)
    }


def _llama_config(spec: TinyModelSpec, vocab_size: int, num_layers: int) -> dict[str, object]:
    special_ids = {token: index for index, token in enumerate(SPECIAL_TOKENS)}
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": special_ids[BOS_TOKEN],
        "eos_token_id": special_ids[EOS_TOKEN],
        "pad_token_id": special_ids[PAD_TOKEN],
        "head_dim": spec.hidden_size // spec.num_attention_heads,
        "hidden_act": "silu",
        "hidden_size": spec.hidden_size,
        "initializer_range": 0.02,
        "intermediate_size": spec.intermediate_size,
        "max_position_embeddings": spec.max_position_embeddings,
        "mlp_bias": False,
        "num_attention_heads": spec.num_attention_heads,
        "num_hidden_layers": num_layers,
        "num_key_value_heads": spec.num_key_value_heads,
        "rms_norm_eps": 1e-5,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": spec.dtype,
        "use_cache": True,
        "vocab_size": vocab_size,
    }


def _tokenizer_config() -> dict[str, object]:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 2048,
        "chat_template": CHAT_TEMPLATE,
    }


def _write_checkpoint(
    directory: Path,
    spec: TinyModelSpec,
    vocab_size: int,
    num_layers: int,
    weights: dict[str, npt.NDArray[np.float32]],
    tokenizer_json: str,
) -> None:
    config = _llama_config(spec, vocab_size, num_layers)
    generation_config = {
        "bos_token_id": config["bos_token_id"],
        "eos_token_id": config["eos_token_id"],
        "pad_token_id": config["pad_token_id"],
        "do_sample": False,
    }
    special_tokens_map = {"bos_token": BOS_TOKEN, "eos_token": EOS_TOKEN, "pad_token": PAD_TOKEN}
    directory.mkdir(parents=True)
    files = {
        "config.json": _canonical_json(config),
        "generation_config.json": _canonical_json(generation_config),
        "tokenizer.json": tokenizer_json,
        "tokenizer_config.json": _canonical_json(_tokenizer_config()),
        "special_tokens_map.json": _canonical_json(special_tokens_map),
    }
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    (directory / "model.safetensors").write_bytes(_safetensors_bytes(weights, spec.dtype))


def _safetensors_bytes(weights: dict[str, npt.NDArray[np.float32]], dtype: str) -> bytes:
    """The safetensors file of ``weights`` stored as ``dtype`` (numpy has no bfloat16, so by hand).

    float32 -> bfloat16 rounds to nearest even, as torch and mlx do.
    """
    import numpy as np

    if dtype not in _SAFETENSORS_DTYPES:
        raise ValueError(f"tiny model dtype {dtype!r}: expected one of {sorted(_SAFETENSORS_DTYPES)}")
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    chunks: list[bytes] = []
    offset = 0
    for name in sorted(weights):
        array = np.ascontiguousarray(weights[name], dtype=np.float32)
        if dtype == "bfloat16":
            bits = array.view(np.uint32)
            rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
            data = rounded.astype("<u2").tobytes()
        else:
            data = array.astype("<f4").tobytes()
        header[name] = {
            "dtype": _SAFETENSORS_DTYPES[dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    return len(encoded).to_bytes(8, "little") + encoded + b"".join(chunks)


def _canonical_json(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
