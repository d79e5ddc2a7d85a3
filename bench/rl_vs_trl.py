"""RL step throughput: `drk rl` vs TRL's GRPOTrainer on the same model, batch and lengths (a benchmark).

    PYTHONPATH=src python bench/rl_vs_trl.py --model R/sft --queries data/synth/held_in.jsonl \
        --prompts 4 --rollouts 8 --max-new-tokens 512 --steps 3 --eval-workers 4 --out OUT

Both sides: the same model (a local checkpoint such as a `drk sft` output that writes kernels, or an offline
size name built at random), the same prompts (drk's first-turn prompt for each task), B prompts x N completions
of up to L new tokens per step (`--temperature`, 1.0 by default), one optimizer step per batch, lr 1e-6, no KL,
single turn (the shapes TRL's trainer has). With `--reward eval` (default) both sides score every completion
with drk's evaluator and drk's reward: drk through its episode loop (with `--overlap-chunks`, evaluation of one
chunk runs while the next is generated), TRL through a reward function that calls the same evaluator with the
same number of workers; `--reward zero` gives TRL a constant reward (generation + training only). On CUDA a
sampler reads the GPU's utilisation (nvidia-smi, every 200 ms) while each side trains: the idle share is the
fraction of samples under 5 %. Reported: seconds per step, steps per hour, idle share, and TRL's seconds inside
the reward function. `--sides gen` times generation alone: drk's engine with its CUDA-graph decoder and with the
eager dynamic-cache loop, seeded and unseeded (and whether two seeded graph calls repeat), transformers'
generate, and with `--hf-static` generate with a static compiled cache.
Writes OUT/rl_vs_trl.json.
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


class GpuSampler:
    """GPU utilisation (%) every 200 ms from nvidia-smi, outside this process, while the block runs."""

    def __init__(self) -> None:
        self.samples: list[int] = []
        self.proc = None

    def __enter__(self) -> "GpuSampler":
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                          "-lms", "200", "-i", "0"], stdout=subprocess.PIPE, text=True)
            threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.strip().isdigit():
                self.samples.append(int(line.strip()))

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()

    def report(self) -> dict:
        if not self.samples:
            return {"idle_share": None, "samples": 0}
        return {"idle_share": sum(u < 5 for u in self.samples) / len(self.samples), "samples": len(self.samples),
                "mean_utilisation": statistics.fmean(self.samples)}


def load_model(a, dtype):
    """A local checkpoint (e.g. `drk sft` output) when --model is a folder, else an offline size built at random;
    with --trl-attn, that attention implementation (TRL's side only)."""
    if Path(a.model).is_dir():
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kw = {"attn_implementation": a.trl_attn} if getattr(a, "trl_attn", "") else {}
        return (AutoModelForCausalLM.from_pretrained(a.model, dtype=dtype, **kw),
                AutoTokenizer.from_pretrained(a.model))
    from drk.engines.tiny import build_tiny_model

    model, tok = build_tiny_model(None, size=a.model, seed=0, dtype=dtype)
    if getattr(a, "trl_attn", ""):
        model.set_attn_implementation(a.trl_attn)
    return model, tok


def run_drk(a, out: Path) -> dict:
    from drk.config import load_config
    from drk.stages.rl import RLConfig, check_run_dir, train

    cfg = load_config(RLConfig, None, {
        "model": a.model, "out": str(out / "drk"), "queries": a.queries, "problems": a.problems, "env": a.env,
        "steps": a.steps, "prompts_per_step": a.prompts, "rollouts": a.rollouts, "turns": a.turns, "lr": 1e-6,
        "max_new_tokens": a.max_new_tokens, "temperature": a.temperature, "micro_batch_tokens": a.micro_batch_tokens,
        "checkpoint_every": 1000,
        "eval_device": a.eval_device, "eval_workers": a.eval_workers, "eval_cache": False, "log_rollouts": False,
        "seed": 0, **({"overlap_chunks": a.overlap_chunks} if a.overlap_chunks > 1 else {}),
        **({"prefetch": True} if a.prefetch else {})})
    check_run_dir(cfg, overwrite=True)  # a run left in OUT (a warm machine's earlier call) would add its steps
    t0 = time.time()
    with GpuSampler() as gpu:
        train(cfg)
    wall = time.time() - t0
    steps = [json.loads(x) for x in (out / "drk" / "metrics.jsonl").read_text().splitlines()]
    step_s = [s["seconds"]["rollout"] + s["seconds"]["score"] + s["seconds"]["train"] for s in steps]
    return {"wall_s": wall, "steps": steps, "step_s": step_s, "gpu": gpu.report(),
            "steps_per_hour": 3600 / statistics.median(step_s) if step_s else None,
            "reward_mean": [s.get("reward_mean") for s in steps],
            "gen_tokens_per_s": statistics.median(s["gen_tokens_per_s"] for s in steps),
            "train_tokens_per_s": statistics.median(s["train_tokens_per_s"] for s in steps)}


def first_messages(task) -> list[dict]:
    """The first turn drk's episode gives `task` (its own prompt where the query set has one, as the synthetic
    tasks do, else drk's KernelBench prompt): TRL must see the prompt the policy was trained on, or it samples
    noise while drk's side samples kernels."""
    from drk.agent.episode import EpisodeConfig, new_episode

    return new_episode(task, 0, EpisodeConfig()).first_messages


def run_trl(a, out: Path) -> dict:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from drk.tasks.queries import load_queries

    cuda = torch.cuda.is_available()
    model, tok = load_model(a, torch.bfloat16 if cuda else torch.float32)
    tasks = load_queries(a.queries, a.problems)
    by_id = {t.id: t for t in tasks}
    rows = [{"prompt": first_messages(t), "task_id": t.id} for t in tasks]
    reward_s: list[float] = []
    reward_phases: list[dict] = []  # per reward call: its evaluations' median phases (drk's metrics have the same)
    pool = None
    if a.reward == "eval":
        from drk.agent.extract import extract_code
        from drk.gym import EvalOptions, EvalRequest, LocalPool
        from drk.gym.reward import turn_reward
        from drk.metrics import phase_medians

        device = "cuda" if (a.eval_device == "auto" and cuda) else ("cpu" if a.eval_device == "auto" else a.eval_device)
        pool = LocalPool(device=device, workers=a.eval_workers or (4 if cuda else 2))
        opts = EvalOptions(device=device)

    def reward(completions, task_id, **kw) -> list[float]:
        if pool is None:
            return [0.0] * len(completions)
        t0 = time.time()
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        codes = [extract_code(t)[0] for t in texts]
        reqs = [(i, EvalRequest(by_id[tid], code, opts)) for i, (tid, code) in enumerate(zip(task_id, codes))
                if code is not None]
        out = [0.0] * len(completions)
        results = pool.evaluate_batch([r for _, r in reqs])
        for (i, _), res in zip(reqs, results):
            out[i] = turn_reward(res)
        reward_s.append(time.time() - t0)
        reward_phases.append(phase_medians(results))
        return out
    ds = Dataset.from_list(rows * (a.steps * a.prompts // max(1, len(rows)) + 1))
    times: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.time()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.time() - self.t0)

    args = GRPOConfig(output_dir=str(out / "trl"), learning_rate=1e-6, max_steps=a.steps, num_generations=a.rollouts,
                      per_device_train_batch_size=a.prompts * a.rollouts, gradient_accumulation_steps=1,
                      max_completion_length=a.max_new_tokens, temperature=a.temperature, top_p=1.0, top_k=0, beta=0.0,
                      bf16=cuda, use_cpu=not cuda, logging_steps=1, save_strategy="no", report_to=[],
                      disable_tqdm=True, seed=0)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args,
                          train_dataset=ds, processing_class=tok, callbacks=[StepTimer()])
    t0 = time.time()
    gpu, error = GpuSampler(), None
    try:
        with gpu:
            trainer.train()
    except Exception:  # noqa: BLE001 - the steps that finished are still measurements (their times, their logs)
        import traceback

        error = traceback.format_exc()[-2000:]
    finally:
        if pool is not None:
            pool.close()
    wall = time.time() - t0
    logs = [h for h in trainer.state.log_history if "completions/mean_length" in h or "num_tokens" in h]
    out = {"wall_s": wall, "step_s": times, "reward_s": reward_s, "reward_phases_s": reward_phases,
           "gpu": gpu.report(), "steps_per_hour": 3600 / statistics.median(times) if times else None,
           "log": logs[-a.steps:]}
    diverged = [h.get("step") for h in logs if not math.isfinite(float(h.get("grad_norm", 0.0) or 0.0))]
    if diverged:  # TRL's training produced a NaN/inf gradient norm at these steps (its weights are NaN after)
        out["grad_norm_nonfinite_steps"] = diverged
    if error is not None:  # steps/hour of a run cut short is not a steady figure: the report says how far it got
        out.update(error=error, steps_completed=len(times), steps_per_hour=None)
    return out


def run_gen(a, out: Path) -> dict:
    """Generation alone, same model and prompts: drk's HFEngine (default CUDA-graph decoder, and the eager
    dynamic-cache loop), seeded (deterministic algorithms on) and unseeded, and transformers' model.generate
    (sampling, top_k=0) as the reference point."""
    import torch

    from drk.engines.base import SamplingParams
    from drk.engines.decoders import left_pad
    from drk.engines.local import HFEngine
    from drk.engines.tiny import build_tiny_model
    from drk.tasks.queries import load_queries

    cuda = torch.cuda.is_available()
    model, tok = build_tiny_model(None, size=a.model, seed=0, dtype=torch.bfloat16 if cuda else torch.float32)
    model = model.to("cuda" if cuda else "cpu")
    engines = {"graph": HFEngine(model, tok), "dynamic": HFEngine(model, tok, decode="dynamic")}
    eng = engines["graph"]
    tasks = load_queries(a.queries, a.problems)[:a.prompts]
    prompts = [eng.encode_conversation(first_messages(t)) for t in tasks]
    rows = [p for p in prompts for _ in range(a.rollouts)]
    report = {"rows": len(rows), "prompt_tokens_mean": statistics.fmean(len(p) for p in rows)}

    def timed(fn):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.time()
        n = fn()
        if cuda:
            torch.cuda.synchronize()
        dt = time.time() - t0
        return {"s": dt, "tokens": n, "tokens_per_s": n / dt}

    samples = {}
    for name, decode, seed in (("warmup", "graph", None), ("drk_seeded", "graph", 1), ("drk_seeded_again", "graph", 1),
                               ("drk_unseeded", "graph", None), ("drk_dynamic_warmup", "dynamic", None),
                               ("drk_dynamic_seeded", "dynamic", 1), ("drk_dynamic_unseeded", "dynamic", None)):
        sp = SamplingParams(temperature=1.0, max_new_tokens=a.max_new_tokens, seed=seed)
        e = engines[decode]

        def gen(e=e, sp=sp, name=name) -> int:
            samples[name] = [g[0] for g in e.generate_ids(rows, sp)]
            return sum(len(g.token_ids) for g in samples[name])

        report[name] = timed(gen)
        report[name]["timing"] = e.take_timing()  # prefill vs decode, ms per decode step
    report["graph_seeded_repeats"] = sum(x.token_ids == y.token_ids for x, y in zip(
        samples["drk_seeded"], samples["drk_seeded_again"])) / len(rows)
    if cuda:  # the graph's log-probs against a teacher-forced forward (bf16: rounding-level differences expected)
        diffs = sorted(abs(x - y) for g in samples["drk_seeded"][:8]
                       for x, y in zip(eng.logprobs_of(g.prompt_token_ids, g.token_ids), g.logprobs))
        report["graph_logprob_vs_teacher_forced"] = {"median": diffs[len(diffs) // 2], "max": diffs[-1]}
    report["graph_used"] = eng._static is not None and eng._static.graph is not None
    report["graph_failed"] = {str(k): v for k, v in eng._graph_failed.items()}
    eng.release()
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids, att, _ = left_pad(rows, pad, model.device)
    L = ids.shape[1]

    def hf() -> int:
        with torch.no_grad():
            o = model.generate(input_ids=ids, attention_mask=att, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                               max_new_tokens=a.max_new_tokens, min_new_tokens=a.max_new_tokens, pad_token_id=pad)
        return int(o.shape[0] * (o.shape[1] - L))

    report["hf_generate"] = timed(hf)

    def hf_static() -> int:  # static KV cache; transformers compiles the decode step (CUDA graphs) for it
        with torch.no_grad():
            o = model.generate(input_ids=ids, attention_mask=att, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                               max_new_tokens=a.max_new_tokens, min_new_tokens=a.max_new_tokens, pad_token_id=pad,
                               cache_implementation="static")
        return int(o.shape[0] * (o.shape[1] - L))

    if cuda and a.hf_static:  # transformers' own CUDA-graph path: the first call compiles, the second is timed
        try:
            report["hf_generate_static_first"] = timed(hf_static)
            report["hf_generate_static"] = timed(hf_static)
        except Exception as e:  # noqa: BLE001 - a measurement, not a requirement
            report["hf_generate_static"] = {"error": f"{type(e).__name__}: {e}"[:500]}
    return report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen3-0.6b")
    ap.add_argument("--queries", default=str(ROOT / "data/queries"))
    ap.add_argument("--problems", default=None)
    ap.add_argument("--env", default="gym")
    ap.add_argument("--eval-device", default="auto")
    ap.add_argument("--eval-workers", type=int, default=None, help="evaluator workers, both sides (default 4 on CUDA)")
    ap.add_argument("--reward", choices=("eval", "zero"), default="eval", help="TRL's reward: drk's evaluator, or 0")
    ap.add_argument("--overlap-chunks", type=int, default=1, help="drk: episodes generated in chunks, each judged "
                    "while the next is generated")
    ap.add_argument("--prefetch", action="store_true", help="drk: the next step's first turns generated while "
                    "this step's kernels are judged (one step off-policy)")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--rollouts", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--temperature", type=float, default=1.0,
                    help="both sides' sampling temperature: a policy's own (the CPU smoke model writes code at 0.6, "
                         "mostly noise at 1.0, so at 1.0 there is little for the evaluator to do)")
    ap.add_argument("--micro-batch-tokens", type=int, default=16384)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--turns", type=int, default=1, help="drk side only (TRL's trainer is single-turn)")
    ap.add_argument("--sides", default="drk,trl")
    ap.add_argument("--trl-attn", default="", help="TRL's side: the model's attention implementation (e.g. eager; "
                    "default: the checkpoint's), to tell whether a NaN gradient comes from the attention kernel")
    ap.add_argument("--hf-static", action="store_true", help="gen: also time generate() with a static compiled cache")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    report = {"config": {k: v for k, v in vars(a).items() if k != "out"}}
    for side in a.sides.split(","):
        try:
            report[side] = {"drk": run_drk, "trl": run_trl, "gen": run_gen}[side](a, a.out)
        except Exception:  # report the failure, keep the other side's numbers
            import traceback

            report[side] = {"error": traceback.format_exc()[-2000:]}
        (a.out / "rl_vs_trl.json").write_text(json.dumps(report, indent=1, default=str))
        print(side, json.dumps(report[side], default=str)[:1500])
        sys.stdout.flush()


if __name__ == "__main__":
    main()
