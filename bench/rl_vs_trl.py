"""RL step throughput: `drk rl` vs TRL's GRPOTrainer on the same model, batch and lengths (a benchmark).

    PYTHONPATH=src python bench/rl_vs_trl.py --model qwen3-0.6b --queries KB/level1 --problems 1-16 \
        --prompts 4 --rollouts 8 --max-new-tokens 256 --steps 3 --out OUT

Both sides: the same randomly initialised model (built locally, bf16 on GPU), the same prompts (drk's
first-turn prompt for each task), B prompts x N completions of up to L new tokens per step, one optimizer
step per batch, lr 1e-6, no KL. drk additionally evaluates every kernel with the evaluator (single turn
here, so the shapes match TRL); TRL's reward function is a constant (it cannot learn anything from a
random model anyway), so TRL's time is generation + training only. Reported: seconds per step and per
phase, generated tokens/s, trained tokens/s. `--sides gen` times generation alone: drk's engine with its
CUDA-graph decoder and with the eager dynamic-cache loop, seeded and unseeded (and whether two seeded graph
calls repeat), transformers' generate, and with `--hf-static` generate with a static compiled cache.
Writes OUT/rl_vs_trl.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def run_drk(a, out: Path) -> dict:
    from drk.config import load_config
    from drk.stages.rl import RLConfig, train

    cfg = load_config(RLConfig, None, {
        "model": a.model, "out": str(out / "drk"), "queries": a.queries, "problems": a.problems, "env": a.env,
        "steps": a.steps, "prompts_per_step": a.prompts, "rollouts": a.rollouts, "turns": a.turns, "lr": 1e-6,
        "max_new_tokens": a.max_new_tokens, "micro_batch_tokens": a.micro_batch_tokens, "checkpoint_every": 1000,
        "eval_device": a.eval_device, "eval_cache": False, "log_rollouts": False, "seed": 0})
    t0 = time.time()
    train(cfg)
    wall = time.time() - t0
    steps = [json.loads(x) for x in (out / "drk" / "metrics.jsonl").read_text().splitlines()]
    return {"wall_s": wall, "steps": steps,
            "step_s": [s["seconds"]["rollout"] + s["seconds"]["score"] + s["seconds"]["train"] for s in steps],
            "gen_tokens_per_s": statistics.median(s["gen_tokens_per_s"] for s in steps),
            "train_tokens_per_s": statistics.median(s["train_tokens_per_s"] for s in steps)}


def run_trl(a, out: Path) -> dict:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from drk.agent.prompts import initial_messages
    from drk.engines.tiny import build_tiny_model
    from drk.tasks.queries import load_queries

    cuda = torch.cuda.is_available()
    model, tok = build_tiny_model(None, size=a.model, seed=0, dtype=torch.bfloat16 if cuda else torch.float32)
    tasks = load_queries(a.queries, a.problems)
    rows = [{"prompt": initial_messages(t.source)} for t in tasks]
    ds = Dataset.from_list(rows * (a.steps * a.prompts // max(1, len(rows)) + 1))
    times: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.time()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.time() - self.t0)

    args = GRPOConfig(output_dir=str(out / "trl"), learning_rate=1e-6, max_steps=a.steps, num_generations=a.rollouts,
                      per_device_train_batch_size=a.prompts * a.rollouts, gradient_accumulation_steps=1,
                      max_completion_length=a.max_new_tokens, temperature=1.0, top_p=1.0, top_k=0, beta=0.0,
                      bf16=cuda, use_cpu=not cuda, logging_steps=1, save_strategy="no", report_to=[],
                      disable_tqdm=True, seed=0)
    trainer = GRPOTrainer(model=model, reward_funcs=lambda completions, **kw: [0.0] * len(completions), args=args,
                          train_dataset=ds, processing_class=tok, callbacks=[StepTimer()])
    t0 = time.time()
    trainer.train()
    wall = time.time() - t0
    logs = [h for h in trainer.state.log_history if "completions/mean_length" in h or "num_tokens" in h]
    return {"wall_s": wall, "step_s": times, "log": logs[-a.steps:]}


def run_gen(a, out: Path) -> dict:
    """Generation alone, same model and prompts: drk's HFEngine (default CUDA-graph decoder, and the eager
    dynamic-cache loop), seeded (deterministic algorithms on) and unseeded, and transformers' model.generate
    (sampling, top_k=0) as the reference point."""
    import torch

    from drk.agent.prompts import initial_messages
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
    prompts = [eng.encode_conversation(initial_messages(t.source)) for t in tasks]
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
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--rollouts", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--micro-batch-tokens", type=int, default=16384)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--turns", type=int, default=1, help="drk side only (TRL's trainer is single-turn)")
    ap.add_argument("--sides", default="drk,trl")
    ap.add_argument("--hf-static", action="store_true", help="gen: also time generate() with a static compiled cache")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    report = {"config": {k: v for k, v in vars(a).items() if k != "out"}}
    for side in a.sides.split(","):
        try:
            report[side] = {"drk": run_drk, "trl": run_trl, "gen": run_gen}[side](a, a.out)
        except Exception as e:  # report the failure, keep the other side's numbers
            import traceback

            report[side] = {"error": traceback.format_exc()[-2000:]}
        (a.out / "rl_vs_trl.json").write_text(json.dumps(report, indent=1, default=str))
        print(side, json.dumps(report[side], default=str)[:1500])
        sys.stdout.flush()


if __name__ == "__main__":
    main()
