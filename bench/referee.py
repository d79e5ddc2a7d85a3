"""An independent timing referee: imports nothing from drk (a benchmark helper, not a test).

    python3 bench/referee.py TASK.py SOLUTION.py [--compile] [--profiled] [--host-ahead]
        ->  one JSON line {reference_ms, candidate_ms[, compiled_reference_ms][, *_under_profiler]}

Builds the task's `Model` and the solution's `ModelNew` with the same seed and inputs on the GPU, and
times each with `triton.testing.do_bench` (median; it flushes the L2 between calls), under no_grad in
train mode, as drk's protocol does. With --compile it also times `torch.compile(Model)` (default options).
With --profiled it times each again inside a device-activity profiler (torch.profiler, CUDA activity only),
the one drk runs candidates under: the difference is what the profiler costs the timer.
With --host-ahead it also times each with do_bench's loop (flush, events, median) written out here with one
change: every 16 calls are enqueued while the stream is held by a spin kernel (`torch.cuda._sleep`), so each
call's events time the device only, even where the host enqueues more slowly than the GPU runs
(`*_host_ahead_ms`; `*_host_behind` counts the chunks whose hold ended before the host had enqueued them).
"""
import importlib.util
import json
import statistics
import sys
import time

import torch
import triton.testing


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def host_ahead_bench(fn, warmup_ms: float = 25.0, rep_ms: float = 200.0, chunk: int = 16) -> tuple[float, int]:
    """(median ms, chunks the host fell behind in): do_bench's flush-events-median loop, each chunk of calls
    enqueued behind a spin kernel that lasts 3x the host's enqueue time of the previous chunk."""
    cache = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")
    torch.cuda.synchronize()
    t0 = torch.cuda.Event(enable_timing=True)
    t1 = torch.cuda.Event(enable_timing=True)
    t0.record()
    for _ in range(5):
        cache.zero_()
        fn()
    t1.record()
    torch.cuda.synchronize()
    est = max(t0.elapsed_time(t1) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / est))):
        fn()
    t0.record()
    torch.cuda._sleep(10**7)
    t1.record()
    torch.cuda.synchronize()
    cycles_per_ms = 10**7 / t0.elapsed_time(t1)
    n = max(chunk, int(rep_ms / est))
    times, behind, host_ms = [], 0, 1.0
    while len(times) < n:
        torch.cuda._sleep(int(cycles_per_ms * min(100.0, 3 * host_ms + 0.05)))
        gate = torch.cuda.Event()
        gate.record()
        h0 = time.perf_counter()
        pairs = []
        for _ in range(chunk):
            cache.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            pairs.append((s, e))
        host_ms = (time.perf_counter() - h0) * 1000.0
        if gate.query():
            behind += 1
        torch.cuda.synchronize()
        times += [s.elapsed_time(e) for s, e in pairs]
    return statistics.median(times), behind


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
        if "--host-ahead" in sys.argv[3:]:
            for name, fn in fns.items():
                out[name[:-3] + "_host_ahead_ms"], out[name[:-3] + "_host_behind"] = host_ahead_bench(fn)
        if "--profiled" in sys.argv[3:]:
            from torch.profiler import ProfilerActivity, profile

            for name, fn in fns.items():
                with profile(activities=[ProfilerActivity.CUDA]):
                    out[name[:-3] + "_under_profiler_ms"] = triton.testing.do_bench(fn, warmup=25, rep=200,
                                                                                   return_mode="median")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
