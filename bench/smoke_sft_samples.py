"""How well does an SFT checkpoint reproduce the template teacher? Samples completions for the smoke run's
synthetic tasks and counts, per task, the exact reproductions of each teacher variant (no evaluator: an exact
`fast` reproduction is correct by construction, an exact `nomask` one wrong; anything else is "other").

A policy worth starting RL from samples intact templates at the RL temperature, mostly, and both a correct and
a wrong variant on every task (so TRLOO has within-group differences to learn from).

    python bench/smoke_sft_samples.py runs/smoke/sft [--queries data/synth/held_in.jsonl] [--problems 1-4]
        [--n 16] [--temperature 1.0] [--seed 0]
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="an SFT output folder (Hugging Face checkpoint)")
    ap.add_argument("--queries", default="data/synth/held_in.jsonl")
    ap.add_argument("--problems", default="1-4")
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--max-new-tokens", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)

    from drk.agent.extract import extract_code
    from drk.engines import SamplingParams
    from drk.engines.local import HFEngine
    from drk.engines.template import kernel_source, variants_for
    from drk.tasks.queries import load_queries
    from drk.tasks.synth import parse_composition

    engine = HFEngine.from_pretrained(a.model, dtype="float32", device="cpu")
    tasks = load_queries(a.queries, a.problems)
    t0 = time.perf_counter()
    convs = [t.meta["prompt"] for t in tasks]
    gens = engine.generate(convs, SamplingParams(temperature=a.temperature, max_new_tokens=a.max_new_tokens,
                                                 n=a.n, seed=a.seed))
    total = collections.Counter()
    for task, g in zip(tasks, gens):
        op, kind = parse_composition(task.source)
        by_code = {kernel_source(op, kind, v): v for v in variants_for(kind)}
        c = collections.Counter(by_code.get(extract_code(x.text)[0] or "", "other") for x in g)
        total.update(c)
        print(f"{task.id:40s} " + "  ".join(f"{k}={v}" for k, v in sorted(c.items())))
    n = sum(total.values())
    print(f"all: " + "  ".join(f"{k}={v} ({v / n:.0%})" for k, v in sorted(total.items()))
          + f"   [{time.perf_counter() - t0:.0f} s, temperature {a.temperature}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
