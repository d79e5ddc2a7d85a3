"""An independent timing referee: imports nothing from drk (a benchmark helper, not a test).

    python3 bench/referee.py TASK.py SOLUTION.py [--compile] [--profiled]
        ->  one JSON line {reference_ms, candidate_ms[, compiled_reference_ms][, *_under_profiler]}

Builds the task's `Model` and the solution's `ModelNew` with the same seed and inputs on the GPU, and
times each with `triton.testing.do_bench` (median; it flushes the L2 between calls), under no_grad in
train mode, as drk's protocol does. With --compile it also times `torch.compile(Model)` (default options).
With --profiled it times each again inside a device-activity profiler (torch.profiler, CUDA activity only),
the one drk runs candidates under: the difference is what the profiler costs the timer.
"""
import importlib.util
import json
import sys

import torch
import triton.testing


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    task, sol = load(sys.argv[1], "referee_task"), load(sys.argv[2], "referee_solution")
    torch.manual_seed(42)
    init = list(task.get_init_inputs())
    torch.manual_seed(42)
    ref = task.Model(*init).cuda()
    torch.manual_seed(42)
    cand = sol.ModelNew(*init).cuda()
    torch.manual_seed(42)
    with torch.device("cuda"):
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
    out = {}
    fns = {}
    with torch.no_grad():
        for name, m in (("reference_ms", ref), ("candidate_ms", cand)):
            m.train(True)
            fns[name] = lambda m=m: m(*inputs)
        if "--compile" in sys.argv[3:]:
            compiled = torch.compile(ref)
            compiled(*inputs)  # compile outside the timed region
            fns["compiled_reference_ms"] = lambda: compiled(*inputs)
        for name, fn in fns.items():
            out[name] = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
        if "--profiled" in sys.argv[3:]:
            from torch.profiler import ProfilerActivity, profile

            for name, fn in fns.items():
                with profile(activities=[ProfilerActivity.CUDA]):
                    out[name[:-3] + "_under_profiler_ms"] = triton.testing.do_bench(fn, warmup=25, rep=200,
                                                                                   return_mode="median")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
