"""`drk sft`: cold-start supervised fine-tuning on multi-turn trajectories, with TRL's SFTTrainer.

Data: `trajectories.jsonl` from `drk collect` (the `messages` column), or a Hugging Face dataset in the same
layout. Loss on assistant tokens only (`assistant_only_loss`: a chat template with `{% generation %}`
markers; TRL swaps one in for the templates it knows, and drk's ChatML template is used for ChatML tokenizers
without markers). Optional LoRA (PEFT), packing, multi-GPU through `accelerate launch -m drk sft ...`.

Filters: `all` episodes; `correct` = episodes with at least one correct turn; `upto_best` = correct episodes
truncated after their best turn (the conversation ends with the best kernel).

Outputs in OUT: the Hugging Face checkpoint (full model or LoRA adapter) with its tokenizer, and
`sft_config.json`, the resolved config. The paper's setting is `recipes/sft.yaml`. Entry: `run(recipe,
overrides)`.

Resume: OUT belongs to one run (its `sft_config.json`). Running the same command again continues from the
trainer's latest `checkpoint-N` in OUT (model, optimizer, scheduler, RNG and data position), or does nothing
when `sft_summary.json` (written after the final model) says the run finished. Ctrl-C finishes the current
optimizer step, saves a checkpoint there and stops, so an interrupted run loses at most one step. A directory
holding another run is refused unless `overwrite`.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from drk.config import ConfigError, load_config, option
from drk.loading import check_report_to, load_policy
from drk.records import claim_run_dir, read_jsonl, write_json


@dataclass
class SFTConfig:
    """Every option of `drk sft`: its recipe key and (dashed) flag; the comments are the --help lines."""
    model: str = option("tiny", panel="model")  # HF id or local path; tiny | small | qwen3-0.6b build an offline model
    data: str = option("trajectories.jsonl", panel="in")  # drk collect output (JSONL) or an HF dataset id with a `messages` column
    out: str = option("runs/sft", panel="out")  # checkpoint directory; rerun with the same --out to resume
    filter: str = option("all", panel="in")  # all | correct | upto_best
    lr: float = 1e-6                 # paper: 1e-6 (the released script: 2e-5)
    epochs: float = 4.0              # passes over the conversations
    batch_size: int = 256            # global batch (sequences per optimizer step); released script: 64
    micro_batch_size: int = 1        # per device; gradient accumulation fills the global batch
    max_length: int = 16384          # tokens per sequence (longer ones are truncated)
    packing: bool = False            # pack several conversations into each sequence
    lora: bool = option(False, panel="model")  # train a LoRA adapter instead of every weight
    lora_r: int = option(16, panel="model")  # LoRA rank
    lora_alpha: int = option(32, panel="model")  # LoRA scale numerator (the update is scaled by alpha / r)
    lora_dropout: float = option(0.0, panel="model")  # dropout on the LoRA branch
    lora_target: list[str] = option(factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                     "down_proj"], panel="model")  # modules given an adapter
    bf16: bool = True                # used when the device supports it
    gradient_checkpointing: bool = False  # recompute activations in the backward pass (less memory, slower)
    warmup_ratio: float = 0.0       # a fraction of the steps (transformers 5: warmup_steps < 1)
    lr_scheduler: str = "cosine"     # the trainer's learning-rate schedule (cosine, linear, constant, ...)
    weight_decay: float = 0.0        # AdamW's decoupled weight decay
    seed: int = 42                   # seed of the data order, dropout and an offline model's weights
    logging_steps: int = 1           # log the loss every N steps
    save_steps: int = 0              # checkpoint every N steps; 0: none but the one Ctrl-C saves
    report_to: str = option("none", panel="out")  # none | tensorboard | trackio | wandb (the trainer's tracker integrations)
    limit: int | None = option(None, panel="in", min=1)  # use only the first N conversations (after the filter)


def load_conversations(cfg: SFTConfig) -> list[dict]:
    """Rows {"messages": [...]} after the filter; raises ConfigError when nothing is left."""
    path = Path(cfg.data)
    if path.exists():
        rows = list(read_jsonl(path))
        if not rows:
            raise ConfigError(f"{path}: no trajectories (empty or not JSON Lines)")
    else:
        try:
            import datasets

            rows = list(datasets.load_dataset(cfg.data, split="train"))
        except Exception as e:
            raise ConfigError(f"training data not found: {cfg.data} ({type(e).__name__})") from None
    out = []
    for i, r in enumerate(rows):
        if r.get("stopped") in ("infra_error", "engine_error"):
            continue  # the endpoint or evaluator failed that episode: not the teacher's behaviour, never data
        msgs = r.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise ConfigError(f"{cfg.data}: row {i + 1} has no `messages` list")
        best = r.get("best_round")
        if cfg.filter in ("correct", "upto_best") and best is None:
            continue
        if cfg.filter == "upto_best":
            msgs = truncate_after_turn(msgs, int(best))
        elif cfg.filter != "all" and cfg.filter not in ("correct",):
            raise ConfigError(f"unknown filter {cfg.filter!r}: use all, correct or upto_best")
        out.append({"messages": [{"role": m["role"], "content": m["content"]} for m in msgs]})
    if not out:
        raise ConfigError(f"no trajectories left after filter {cfg.filter!r}")
    return out[:cfg.limit] if cfg.limit else out


def truncate_after_turn(messages: list[dict], turn: int) -> list[dict]:
    """Keep the conversation up to and including the assistant reply of turn `turn` (0-based)."""
    seen = -1
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            seen += 1
            if seen == turn:
                return messages[:i + 1]
    return messages


def ensure_training_template(tokenizer) -> None:
    """Give ChatML tokenizers without generation markers drk's ChatML training template (TRL patches the
    templates it knows itself)."""
    tpl = tokenizer.chat_template or ""
    if "generation" in tpl:
        return
    vocab = tokenizer.get_vocab()
    if "<|im_start|>" in vocab and "<|im_end|>" in vocab and "im_start" in tpl:
        from trl.chat_template_utils import get_training_chat_template

        try:
            if get_training_chat_template(tokenizer) is not None:
                return  # TRL knows this template and will patch it
        except Exception:
            pass
        from drk.engines.tiny import CHAT_TEMPLATE

        tokenizer.chat_template = CHAT_TEMPLATE


def build_trainer(cfg: SFTConfig, rows: list[dict] | None = None):
    """The TRL SFTTrainer for `cfg` (not yet trained); `rows` are the conversations if already loaded."""
    import torch
    from datasets import Dataset
    from trl import SFTConfig as TRLConfig
    from trl import SFTTrainer

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = load_conversations(cfg) if rows is None else rows
    model, tok = load_policy(cfg.model, save_offline_to=out / "base-model")
    ensure_training_template(tok)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    accum = max(1, cfg.batch_size // max(1, cfg.micro_batch_size * world))
    bf16 = cfg.bf16 and torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    args = TRLConfig(
        output_dir=str(out), learning_rate=cfg.lr, num_train_epochs=cfg.epochs,
        per_device_train_batch_size=cfg.micro_batch_size, gradient_accumulation_steps=accum,
        max_length=cfg.max_length, packing=cfg.packing, assistant_only_loss=True, bf16=bf16,
        gradient_checkpointing=cfg.gradient_checkpointing, warmup_steps=cfg.warmup_ratio,
        lr_scheduler_type=cfg.lr_scheduler, weight_decay=cfg.weight_decay, seed=cfg.seed,
        logging_steps=cfg.logging_steps, save_strategy="steps" if cfg.save_steps else "no",
        save_steps=cfg.save_steps or 500, report_to=[] if cfg.report_to == "none" else [cfg.report_to],
        dataset_num_proc=None, use_cpu=not torch.cuda.is_available(), disable_tqdm=True,
    )
    peft_config = None
    if cfg.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                 target_modules=cfg.lora_target, task_type="CAUSAL_LM")
    return SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok,
                      peft_config=peft_config)


# What a run leaves in OUT besides its config: removed by `overwrite`, so that another run's checkpoints are
# never resumed from, its summary never taken for this run's "finished", its weights never for this run's.
RUN_OUTPUTS = ("checkpoint-*", "runs", "sft_summary.json", "*.safetensors", "*.safetensors.index.json", "*.bin",
               "config.json", "adapter_config.json", "generation_config.json")


def run_outputs(out: Path) -> tuple[str, ...]:
    if not out.is_dir():
        return ()
    return tuple(sorted({p.name for pat in RUN_OUTPUTS for p in out.glob(pat)}))


def latest_checkpoint(out: Path) -> Path | None:
    """The trainer's newest `checkpoint-N` folder in OUT (highest N), or None."""
    from transformers.trainer_utils import get_last_checkpoint

    last = get_last_checkpoint(str(out)) if out.is_dir() else None
    return Path(last) if last else None


def claim_sft_dir(cfg: SFTConfig, overwrite: bool = False) -> tuple[str, Path | None]:
    """("fresh" | "resume" | "finished", checkpoint to resume from). The shared run-directory rule of every
    stage (records.claim_run_dir): another run's directory is refused unless `overwrite`."""
    out = Path(cfg.out)
    same = claim_run_dir(out, "sft_config.json", asdict(cfg), overwrite=overwrite, outputs=run_outputs(out))
    if not same:
        return "fresh", None
    if (out / "sft_summary.json").exists():  # written after the final model: the run is complete
        return "finished", None
    ck = latest_checkpoint(out)
    return ("resume", ck) if ck is not None else ("fresh", None)  # died before its first checkpoint


class _StopOnInterrupt:
    """Ctrl-C during training asks the trainer to save a checkpoint at the end of the current optimizer step
    and stop (a checkpoint from the middle of a step could not be resumed exactly). A second Ctrl-C raises
    KeyboardInterrupt at once, for a step that takes too long. Every process of a distributed run stops at the
    same step (the request is max-reduced over processes), or the others would wait forever in a collective."""

    def __init__(self) -> None:
        from transformers import TrainerCallback

        self.requested = False
        stopper = self

        class Callback(TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                if args.world_size > 1:
                    import torch
                    import torch.distributed as dist

                    flag = torch.tensor([float(stopper.requested)], device=args.device)
                    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                    stopper.requested = bool(flag.item())
                if stopper.requested:
                    control.should_save = True
                    control.should_training_stop = True
                return control

        self.callback = Callback()

    def handler(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("drk: interrupt: saving a checkpoint after this step (Ctrl-C again to stop without it)",
              file=sys.stderr, flush=True)


def run(recipe: str | Path | None = None, overrides: dict | None = None, *, overwrite: bool = False,
        on_start: Callable[[SFTConfig, Path | None], None] | None = None) -> tuple[SFTConfig, dict]:
    """`drk sft`: the config (a recipe under `overrides`), then train, resume or find finished the run in its
    `out`. Returns (config, summary); the summary has `finished_before` true when there was nothing to do.
    `on_start(cfg, checkpoint)` before training; `checkpoint` is the one the run continues from, or None.
    Raises KeyboardInterrupt after Ctrl-C, once the checkpoint is saved."""
    cfg = load_config(SFTConfig, recipe, overrides or {})
    check_report_to(cfg.report_to)
    out = Path(cfg.out)
    rows = load_conversations(cfg)  # bad data is refused before OUT is claimed for this config
    state, ck = claim_sft_dir(cfg, overwrite=overwrite)
    if state == "finished":
        return cfg, {**json.loads((out / "sft_summary.json").read_text()), "finished_before": True}
    if on_start is not None:
        on_start(cfg, ck)
    trainer = build_trainer(cfg, rows)
    stop = _StopOnInterrupt()
    trainer.add_callback(stop.callback)
    main = threading.current_thread() is threading.main_thread()  # signal handlers only from the main thread
    old = signal.signal(signal.SIGINT, stop.handler) if main else None
    try:
        result = trainer.train(resume_from_checkpoint=str(ck) if ck else None)
    finally:
        if main:
            signal.signal(signal.SIGINT, old)
    if stop.requested:
        raise KeyboardInterrupt  # the checkpoint is saved; the CLI prints the resume hint and exits 130
    trainer.save_model(str(out))
    trainer.processing_class.save_pretrained(str(out))
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    summary = {"train_loss": result.training_loss, "losses": losses, "steps": trainer.state.global_step,
               "examples": len(trainer.train_dataset)}
    write_json(out / "sft_summary.json", summary)  # last: its presence means the run is complete
    return cfg, summary
