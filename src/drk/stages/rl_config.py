"""`RLConfig`: every option of `drk rl`, each field its recipe key and (dashed) its flag, the comment its
--help line; nested sections are flags like `--algo.use-mrs` and recipe mappings like `algo: {use_mrs: false}`.

Apart from drk.stages.rl (which imports torch) so that `drk --help` builds the command's options instantly.
"""
from __future__ import annotations

from dataclasses import dataclass

from drk.config import option
from drk.engines.base import SamplingParams
from drk.gym.types import EvalOptions
from drk.train.settings import AlgoConfig, LossScaling, TurnSelection

# evaluator options RL recipes may set but `drk rl` has no flag for (`drk eval` and `drk collect` do)
RECIPE_ONLY_EVAL_OPTIONS = ("trials", "tolerance", "seed", "timing", "warmup", "timing_trials", "l2_flush",
                            "compile_baseline", "profile", "scale", "fp64_check", "max_plausible_speedup",
                            "low_coverage")
DEFAULT_LORA_TARGET = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass
class RLConfig:
    model: str = option("tiny", panel="model")  # HF id / local path (e.g. a drk sft checkpoint); tiny | small | qwen3-0.6b built offline
    out: str = option("runs/rl", panel="out")  # run directory (checkpoints, metrics.jsonl, rollouts/)
    queries: str = option("data/queries", panel="in")  # query set (folder, JSONL/parquet, HF id); see drk.tasks.queries
    problems: str | None = option(None, panel="in")  # subset of the query set: 1-10,15
    env: str = option("gym", panel="eval")  # gym (the evaluator); a run given an Environment in code records its name
    steps: int = 300                 # training steps (each one rollout batch, then updates_per_step optimizer steps)
    prompts_per_step: int = 16       # B
    rollouts: int = 16               # N per prompt
    turns: int = 3                   # T
    lr: float = 1e-6                 # AdamW learning rate
    weight_decay: float = 0.01       # AdamW's decoupled decay on every trained parameter (the released trainer's 0.01)
    warmup_steps: int = 0            # linear learning-rate warmup over this many steps
    grad_clip: float = 1.0           # clip the gradient's global norm to this
    updates_per_step: int = 1        # optimizer steps per rollout batch (mini-batches)
    # the sampler's options, nested whole (flat: `temperature`, `top_p`, `max_new_tokens` as always); its seed
    # is drawn per turn from `seed`, and each episode samples one reply per turn
    sampling: SamplingParams = option(factory=lambda: SamplingParams(max_new_tokens=8192), flat=True, panel="model",
                                      hide=("top_k", "n", "seed", "stop"),
                                      flags={"n": "--sampling-n", "seed": "--sampling-seed"})
    max_context_tokens: int = option(32768, panel="model")  # an episode whose next context is longer stops
    micro_batch_tokens: int = 16384  # padded tokens per training micro-batch
    lora: bool = option(False, panel="model")  # train a LoRA adapter instead of every weight
    lora_r: int = option(64, panel="model")  # LoRA rank
    lora_alpha: int = option(128, panel="model")  # LoRA scale numerator (the update is scaled by alpha / r)
    lora_target: list[str] = option(factory=lambda: list(DEFAULT_LORA_TARGET), panel="model")  # modules given an adapter
    dtype: str = option("auto", panel="model")  # auto (bf16 on GPU, fp32 on CPU) | bfloat16 | float32
    gradient_checkpointing: bool = False  # recompute activations in the backward pass (less memory, slower)
    engine: str = option("hf", panel="model")  # hf (the training model itself) | vllm (weights synced every step)
    deterministic_generation: bool = option(False, panel="model")  # hf: torch deterministic algorithms while sampling (~30% slower on GPU)
    decode: str | None = option(None, panel="model")  # hf token loop: auto (CUDA graph on GPU) | graph | static | dynamic;
    #                                  None: $DRK_DECODE, else auto
    algo: AlgoConfig = option(factory=AlgoConfig, panel="algo")  # the RL objective (reward, advantages, MRS, PRS, loss)
    gym: str = option("local", panel="eval", envvar="DRK_GYM")  # evaluator: local | http://HOST:PORT (drk gym serve) | ray | ray://HOST:PORT
    eval_cache: bool = option(True, panel="eval")  # identical candidates are evaluated once (OUT/eval_cache.sqlite)
    # the evaluator's protocol, nested whole (flat: `eval_device`, `eval_timeout_s`, `eval_input_budget_mb` as
    # always; the rest, `trials`, `tolerance`, ..., in recipes)
    eval_options: EvalOptions = option(factory=EvalOptions, flat=True, panel="eval",
                                       flags={"device": "--eval-device", "timeout_s": "--eval-timeout-s",
                                              "input_budget_mb": "--eval-input-budget-mb", "seed": "--eval-seed"},
                                       hide=RECIPE_ONLY_EVAL_OPTIONS)
    eval_workers: int | None = option(None, panel="eval")  # evaluation workers (default: one per GPU; CPU: up to 4)
    overlap_chunks: int = option(1, panel="eval")  # generate each turn in this many chunks, each judged while the next is generated
    prefetch: bool = option(False, panel="eval")  # generate the next step's first turns while this step's last kernels are judged, and judge them while it trains (one step off-policy; MRS measures the mismatch)
    time_limit_s: float | None = option(None, panel="out", min=1)  # end the run early, complete (final/ saved), before a step that would end past this many seconds of the training loop (judged by the slowest of the last three steps after the first)
    checkpoint_every: int = option(10, panel="out")  # save a resumable checkpoint every N steps
    keep_checkpoints: int = option(2, panel="out")  # older checkpoints are deleted
    seed: int = 0                    # seed of the query order, sampling, PRS and an offline model's weights
    log_rollouts: bool = option(True, panel="out")  # write every turn to OUT/rollouts/step_XXXXX.jsonl
    limit: int | None = option(None, panel="in", min=1)  # use only the first N queries (after `problems`)
    report_to: str = option("none", panel="out")  # none | tensorboard | trackio | wandb, through accelerate's trackers
    loss_scaling: LossScaling = option(factory=LossScaling, panel="selection")  # loss scale factor, micro-batch weights
    turn_selection: TurnSelection = option(factory=TurnSelection, panel="selection")  # void turns, flat groups, PRS details
