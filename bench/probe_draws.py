"""Why a probe did or did not catch one attack: the attack evaluated under fixed input seeds (a LocalPool on
--device), and for each seed the probe's own input rebuilt here the way the judge builds it, with what the
candidate's code does on it (run in this process: a diagnostic for a known attack, never a defence). Prints per
seed the verdict, the probe input's statistics, the candidate's misses against the float32 and float64 references,
and whether the float32 reference is within an eighth of the tolerance of float64 (the probe's evidence rule).

    PYTHONPATH=src python3 bench/probe_draws.py tests/attacks/m10b_naive_variance_relative_switch.py \
        --probe near_all --seeds 0-11 --device cuda [--no-evaluate]
"""
from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

import test_attacks as ta  # noqa: E402
from drk.gym import EvalOptions, EvalRequest, LocalPool  # noqa: E402
from drk.gym.common import harness  # noqa: E402
from drk.gym.judge.checks import TrialChecks  # noqa: E402
from drk.tasks import task_from_file  # noqa: E402

PLACE = {"wide": 0, "offset": 2, "near": 3, "offset_items": 4, "near_all": 5, "edge": 6}  # seed = input_seed + trials + k


def misses(out: torch.Tensor, ref: torch.Tensor, tol: float) -> int:
    d = (out.double() - ref.double()).abs()
    return int((~(d <= tol + tol * ref.double().abs())).sum())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("attack")
    ap.add_argument("--probe", default="near_all", choices=sorted(PLACE))
    ap.add_argument("--seeds", default="0-7", help="a-b (inclusive) or comma-separated")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--no-evaluate", action="store_true", help="only the rebuilt probe, no evaluation")
    ap.add_argument("--out", default="", help="JSON lines, one per seed")
    ap.add_argument("--grid", default="", help="MEANS/SHRINKS (e.g. 2,4,8/300,1000,3000): also inputs of the task's "
                    "shapes around one mean with the trial spread shrunk, every item alike")
    args = ap.parse_args()
    a, _, b = args.seeds.partition("-")
    seeds = list(range(int(a), int(b) + 1)) if b else [int(s) for s in args.seeds.split(",")]
    path = Path(args.attack)
    header = ta.HEADERS[path.name]
    task = task_from_file(ROOT / header["task"])
    verdicts: dict[int, tuple[str, str]] = {}
    if not args.no_evaluate:
        budget = {"input_budget_mb": 0.25} if args.device == "cpu" else {}
        with LocalPool(device=args.device, workers=2) as pool:
            futs = {s: pool.submit(EvalRequest(task, path.read_text(), EvalOptions(
                device=args.device, input_seed=s, trials=args.trials, **budget), solution=f"{path.name}@{s}"))
                for s in seeds}
            for s, f in futs.items():
                r = f.result()
                verdicts[s] = (r.verdict, r.error[:160])
    module = types.ModuleType("task")
    exec(compile(task.source, "task", "exec"), module.__dict__)
    cand = types.ModuleType("cand")
    exec(compile(path.read_text(), str(path), "exec"), cand.__dict__)
    init = harness.make_init_inputs(module, 0)
    ref_model = harness.build_model(module, "Model", init, 0, args.device)
    new_model = harness.build_model(cand, "ModelNew", init, 0, args.device)
    tol = 1e-2
    sink = open(args.out, "w") if args.out else None
    for s in seeds:
        k = s + args.trials + PLACE[args.probe]
        # the probe transforms are static methods: the class stands in for a judge's checks
        inputs = TrialChecks._probe_inputs(TrialChecks, args.probe, harness.make_inputs(module, k, args.device), k)
        with torch.no_grad():
            r32 = ref_model(*inputs)
            r64 = ref_model.double()(*[t.double() for t in inputs]); ref_model.float()
            out = new_model(*inputs)
        x = inputs[0]
        row = {"seed": s, "verdict": verdicts.get(s, ("-", ""))[0], "error": verdicts.get(s, ("", ""))[1],
               "mean": float(x.mean()), "std": float(x.std()),
               "cand_vs_32": misses(out, r32, tol), "cand_vs_64": misses(out, r64, tol),
               "ref32_off_at_tol8": misses(r32, r64, tol / 8), "ref32_maxdiff": float((r32.double() - r64).abs().max())}
        print(json.dumps(row), flush=True)
        if sink:
            sink.write(json.dumps(row) + "\n")
    if args.grid:
        means, shrinks = (list(map(float, part.split(","))) for part in args.grid.split("/"))
        base = harness.make_inputs(module, 0, args.device)[0]
        spread = float(base.std())
        for m in means:
            for sh in shrinks:
                x = m + (base - base.mean()) / sh
                with torch.no_grad():
                    r32 = ref_model(x)
                    r64 = ref_model.double()(x.double()); ref_model.float()
                    out = new_model(x)
                row = {"mean": m, "shrink": sh, "std": spread / sh, "cand_vs_64": misses(out, r64, tol),
                       "ref32_off_at_tol8": misses(r32, r64, tol / 8),
                       "ref32_maxdiff": float((r32.double() - r64).abs().max())}
                print(json.dumps(row), flush=True)
                if sink:
                    sink.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
