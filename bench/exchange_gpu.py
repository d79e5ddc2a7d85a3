"""How long one forward's tensor exchange takes on a GPU, stage by stage, for inputs and outputs of a given
size, for an evaluation's first forward (which makes the file) and a later one (which reuses it): the
judge's copy of the inputs into the memory file and the output slots' fill, the candidate's mapping, its
copy of the inputs to its device, its outputs into the file, the judge's copy of them back; and, for scale, the
judge's digest and comparison of tensors that size. Both sides run in this one process (the copies are
the same calls). Variants: `shipped` (drk.gym.common.shm as it is:
pinned on CUDA), `pageable` (pinning off: the staging path the driver takes when it refuses to pin).

    python bench/exchange_gpu.py --gb 6 --out exchange.json
"""
from __future__ import annotations

import argparse
import json
import os
import time

import torch

from drk.gym.common import compare, shm


def _t(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return out, round(time.perf_counter() - t0, 3)


def one(gb: float, variant: str) -> dict:
    n = int(gb * 2**30) // 4
    x = torch.rand(n, device="cuda")
    ref = torch.rand(n, device="cuda")
    row: dict = {"variant": variant, "gb_each": gb}
    pin = shm._pin
    if variant == "pageable":
        shm._pin = lambda mm: 0
    try:
        ex = shm.Exchange()
        mp = None
        for fwd in ("first", "next"):  # the first forward of an evaluation makes the file, later ones reuse it
            _, row[f"{fwd}_judge_load_s"] = _t(lambda: ex.load([x], [ref]))
            mp, row[f"{fwd}_cand_open_s"] = _t(lambda: shm.Mapped.open(mp, os.dup(ex.fd), ex.header(), pin=True))
            ins, row[f"{fwd}_cand_inputs_to_device_s"] = _t(lambda: mp.input_tensors("cuda"))
            y = ins[0] * 1.0
            _, row[f"{fwd}_cand_output_to_file_s"] = _t(lambda: mp.write_output(0, y))
            out, row[f"{fwd}_judge_output_to_device_s"] = _t(lambda: ex.output(0, "cuda"))
            row[f"{fwd}_total_s"] = round(sum(v for k, v in row.items() if k.startswith(fwd + "_")), 3)
    finally:
        shm._pin = pin
    row["pinned"] = bool(ex.pinned and mp.pinned)
    _, row["fingerprint_s"] = _t(lambda: compare.fingerprint([x]))
    _, row["compare_s"] = _t(lambda: compare.compare_outputs([out], [ref], 0.01))
    _, row["close_s"] = _t(lambda: (mp.close(), ex.close()))
    return row


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--gb", type=float, default=6.0)
    p.add_argument("--out", default="exchange.json")
    a = p.parse_args()
    rows = []
    for variant in ("shipped", "pageable"):
        try:
            rows.append(one(a.gb, variant))
        except Exception as e:  # report, go on with the next variant
            rows.append({"variant": variant, "error": f"{type(e).__name__}: {e}"})
        print(json.dumps(rows[-1]), flush=True)
        torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
