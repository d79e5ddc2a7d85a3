"""Build a tiny, randomly initialised Qwen3 model and a small BPE tokenizer entirely offline.

What it is: `build_tiny_model(out_dir=None, *, size="tiny"|"small"|"base"|"qwen3-0.6b", seed=0, vocab_size=None, dtype=...)`
returns `(model, tokenizer)`, deterministic given the seed, and saves both in Hugging Face format when `out_dir`
is given (loadable with `AutoModelForCausalLM` / `AutoTokenizer.from_pretrained(out_dir)`). The tokenizer is a
byte-level BPE trained with the `tokenizers` library on the small in-code corpus below, with ChatML special
tokens and a ChatML chat template whose assistant turns are wrapped in `{% generation %}...{% endgeneration %}`
(content plus the closing `<|im_end|>`, so `return_assistant_tokens_mask=True` and TRL's `assistant_only_loss`
train the model to stop; TRL warns when the end-of-turn token is outside the mask).

What it deliberately is not: a useful language model. The weights are random; "qwen3-0.6b" only reproduces the
real Qwen3-0.6B *shape* (vocab padded to 151936 while the tokenizer is small, so samplers must mask ids
>= len(tokenizer): `HFEngine(mask_padded_vocab=True)` does). "small" (about 1M parameters) is the size that
can learn the template teacher's kernels well enough to sample them intact at temperature 1.0 (the CPU smoke
run's policy); "base" (about 102M) is the GPU learning run's; "tiny" stays the fast shape for tests. Nothing is downloaded.

How to test: `pytest tests/test_engines.py -k tiny` (builds "tiny" on CPU in well under 10 s).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SIZES = ("tiny", "small", "base", "qwen3-0.6b")  # the offline model names `drk sft` / `drk rl` accept as --model
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TINY_VOCAB = 1536

# ChatML. The generation prompt is exactly the text that precedes an assistant turn's content, so a prompt plus
# a sampled completion ending in <|im_end|> renders like the same conversation with that assistant turn added.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# BPE training text: the project's own prompt material and code (Python, PyTorch and Triton code plus
# English), so the tokenizer sees the vocabulary of kernel prompts without any outside text. The code part is
# a frozen snapshot (tiny_corpus.txt: prompts, feedback, harness, compare, scaling, synth and the template
# teacher as they stood when the CPU smoke run was last verified to learn, docs/measurements/learning-smoke.md),
# never the live modules: a tokenizer trained on files that change would change with every edit to them, and
# every run and test built on the tiny models (the smoke run's learning proof among them) with it.
_CORPUS_FILE = Path(__file__).with_name("tiny_corpus.txt")


def _corpus_code() -> str:
    return _CORPUS_FILE.read_text()


_CORPUS_TEXT = """
You are a helpful assistant that writes fast and correct Triton kernels. Given a PyTorch reference
architecture, write a new architecture named ModelNew that replaces some operators with custom Triton kernels.
The kernel must produce the same outputs as the reference within a tolerance of one percent, and it should be
faster. Think about memory access patterns, tiling, block sizes, fusion of elementwise operations, and the number
of programs in the launch grid. Explain your reasoning briefly, then give the complete code in one Python block.

The evaluation compiled your kernel and ran it on random inputs. The output was incorrect: the maximum absolute
difference was large. Please fix the bug and try again. The kernel compiled and the result was correct, and the
speedup over the reference was measured on the GPU. Can you make it faster? Consider fusing the activation into
the matrix multiplication, using a larger block size, or reducing the number of loads from global memory.

Hello, how are you today? I would like to learn how to write a softmax kernel. First, each program handles one
row of the input matrix. It loads the row, subtracts the maximum for numerical stability, exponentiates, sums,
and divides. Then it stores the result. This is a simple and common pattern for reductions along the last axis.
system user assistant: The system message sets the role. The user asks a question and the assistant answers.
Your previous kernel failed to compile: NameError, name 'tl' is not defined. The error message and traceback are
shown below. Runtime error: CUDA error, an illegal memory access was encountered, which usually means an
out-of-bounds pointer; check that every load and store uses a mask. Timeout: the evaluation took too long.
The reward is the speedup if the kernel is correct and zero otherwise. We train the policy with reinforcement
learning over several turns, where each turn receives feedback from the environment. Profiling shows that most
of the time is spent in the matrix multiplication, so we should focus on that operator and fuse the bias add.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 16 32 64 128 256 512 1024 2048 4096 8192 0.5 1e-5 3.14159.
"""


def _corpus() -> list[str]:
    """Training text for the BPE, split into lines (the trainer counts words per line)."""
    return (_corpus_code() + _CORPUS_TEXT).splitlines(keepends=True)


def build_tokenizer(vocab_size: int = TINY_VOCAB) -> Any:
    """Train a byte-level BPE on the in-code corpus and wrap it as a `PreTrainedTokenizerFast` with ChatML."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=1, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    backend.train_from_iterator(_corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None,
        unk_token=None, chat_template=CHAT_TEMPLATE, padding_side="left", model_max_length=32768,
    )
    return tokenizer


def tiny_config(vocab_size: int, *, eos_ids: list[int], pad_id: int) -> Any:
    """The "tiny" Qwen3 shape: hidden 64, 2 layers, 4 heads (2 kv), intermediate 128, tied embeddings."""
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0}, tie_word_embeddings=True,
        eos_token_id=eos_ids, pad_token_id=pad_id, bos_token_id=None,
    )


def small_config(vocab_size: int, *, eos_ids: list[int], pad_id: int) -> Any:
    """The "small" Qwen3 shape: hidden 128, 4 layers, 4 heads (2 kv), intermediate 384, tied embeddings."""
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=vocab_size, hidden_size=128, intermediate_size=384, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=4096,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0}, tie_word_embeddings=True,
        eos_token_id=eos_ids, pad_token_id=pad_id, bos_token_id=None,
    )


def base_config(vocab_size: int, *, eos_ids: list[int], pad_id: int) -> Any:
    """The "base" Qwen3 shape, about 102M parameters with our tokenizer: hidden 768, 16 layers, 12 heads (4 kv),
    head_dim 64, intermediate 2048, tied embeddings. The real-size architecture the GPU learning run trains from
    random init (issue 16 asks for at least ~100M parameters); too slow to train on a CPU."""
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=vocab_size, hidden_size=768, intermediate_size=2048, num_hidden_layers=16,
        num_attention_heads=12, num_key_value_heads=4, head_dim=64, max_position_embeddings=8192,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0}, rms_norm_eps=1e-6,
        tie_word_embeddings=True, eos_token_id=eos_ids, pad_token_id=pad_id, bos_token_id=None,
    )


def qwen3_06b_config(vocab_size: int = 151936, *, eos_ids: list[int] | None = None, pad_id: int | None = None) -> Any:
    """The real Qwen3-0.6B shape (random weights are ours): 28 layers, hidden 1024, 16/8 heads, head_dim 128."""
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=vocab_size, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0}, rms_norm_eps=1e-6,
        tie_word_embeddings=True, eos_token_id=eos_ids, pad_token_id=pad_id, bos_token_id=None,
    )


def make_config(size: str, tokenizer: Any, vocab_size: int | None = None) -> Any:
    """Config for `size`, with eos = [<|im_end|>, <|endoftext|>] and pad = <|endoftext|> from `tokenizer`."""
    eos_ids = [tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.convert_tokens_to_ids("<|endoftext|>")]
    pad_id = tokenizer.pad_token_id
    if size == "tiny":
        return tiny_config(vocab_size or len(tokenizer), eos_ids=eos_ids, pad_id=pad_id)
    if size == "small":
        return small_config(vocab_size or len(tokenizer), eos_ids=eos_ids, pad_id=pad_id)
    if size == "base":
        return base_config(vocab_size or len(tokenizer), eos_ids=eos_ids, pad_id=pad_id)
    if size == "qwen3-0.6b":
        return qwen3_06b_config(vocab_size or 151936, eos_ids=eos_ids, pad_id=pad_id)
    raise ValueError(f"unknown size {size!r}; expected one of {', '.join(SIZES)}")


def _resolve_dtype(dtype: Any) -> Any:
    import torch

    from drk.engines.local import dtype_table

    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype or torch.float32
    return dtype_table()[str(dtype)]


def build_tiny_model(out_dir: str | Path | None = None, *, size: str = "tiny", seed: int = 0,
                     vocab_size: int | None = None, dtype: Any = "float32", device: str = "cpu") -> tuple[Any, Any]:
    """Build `(model, tokenizer)`: random-init Qwen3 of `size` with our BPE tokenizer; save to `out_dir` if given.

    `vocab_size` (default: len(tokenizer) for "tiny", "small" and "base", 151936 for "qwen3-0.6b") may exceed len(tokenizer); the
    extra rows are never produced by the tokenizer and samplers should mask them. The global torch RNG state is
    left untouched (initialisation runs inside `torch.random.fork_rng`).
    """
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    tokenizer = build_tokenizer()
    config = make_config(size, tokenizer, vocab_size)
    if config.vocab_size < len(tokenizer):
        raise ValueError(f"vocab_size {config.vocab_size} < len(tokenizer) {len(tokenizer)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model = model.to(device=device, dtype=_resolve_dtype(dtype)).eval()
    # A neutral generation config: nothing here changes the distribution if someone calls model.generate().
    model.generation_config = GenerationConfig(
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id, do_sample=True, temperature=1.0,
        top_k=0, top_p=1.0,
    )
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        log.info("saved %s model (%d params) and tokenizer to %s", size, model.num_parameters(), out)
    return model, tokenizer
