"""Does writing a kernel's input just before its call (drk's in-place rescaling against output caches) change
its time? Times torch.sum(x, dim=1) on level1/47's shape with CUDA events, L2 flushed before every call, with
and without an in-place x *= (1 + 2^-10) before the flush, each call from an idle device
and back to back. Imports nothing from drk.

    PYTHONPATH=src python3 bench/perturb_effect.py [--shape 128,4096,4095] [--calls 60] [--drk]
"""
import argparse
import statistics
from pathlib import Path

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="128,4096,4095")
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--drk", action="store_true", help="also time it with drk's harness.time_calls")
    ap.add_argument("--task", default="", help="with --drk: the KernelBench file whose inputs and model to time")
    ap.add_argument("--pin", action="store_true", help="with --drk: drk's pinned numerics first")
    a = ap.parse_args()
    x = torch.randn(*[int(s) for s in a.shape.split(",")], device="cuda")
    flush = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")
    fn = lambda: torch.sum(x, dim=1)  # noqa: E731
    for mode, b2b in [(m, b) for b in (False, True) for m in ("plain", "perturbed", "touched-read")]:
        times, events = [], []
        for i in range(a.calls):
            if mode == "perturbed":
                x.mul_(1 + 2 ** -10) if i % 2 == 0 else x.div_(1 + 2 ** -10)
            elif mode == "touched-read":
                x.max()  # reads every page of x, writes nothing
            flush.zero_()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            fn()
            e1.record()
            events.append((e0, e1))
            if not b2b:  # each call from an idle device; else enqueued back to back, as do_bench does
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        times = [e0.elapsed_time(e1) for e0, e1 in events]
        print(f"{'b2b' if b2b else 'sync'} {mode:13s} median {statistics.median(times[5:]):.4f} ms  min {min(times[5:]):.4f}", flush=True)
    if a.drk:  # drk's own timing protocol on the same call and tensor, for comparison (imports drk)
        from drk.gym.common import harness

        if a.task:  # the task's own inputs (get_inputs under drk's device context) and model
            mod = harness.load_module(Path(a.task).read_text(), "perturb_task")
            model = harness.build_model(mod, "Model", harness.make_init_inputs(mod, 0), 0, "cuda")
            inputs = harness.make_inputs(mod, 1, "cuda")
            x = inputs[0]
            fn = lambda: model(*inputs)  # noqa: E731
        if a.pin:
            print("numerics", harness.pin_numerics())
        for host_ahead in (False, True):
            for perturb in ([], [x]):
                ms = harness.time_calls(lambda i: fn(), "cuda", warmup=3, trials=10, l2_flush=True, perturb=perturb,
                                        host_ahead=host_ahead)
                print(f"drk time_calls host_ahead={host_ahead} perturb={bool(perturb)}: runtime "
                      f"{harness.runtime_of(ms)[0]:.4f} ms  b2b {ms.get('b2b')}  device {ms.get('device')}  "
                      f"stream {ms.get('stream')}  gate {ms.get('gate')}", flush=True)


if __name__ == "__main__":
    main()
