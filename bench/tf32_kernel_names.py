"""Which device kernels cuBLAS and cuDNN pick for float32 work with TF32 off (the pinned setting for matmuls) and
on, by op and shape: can the profiler's rows of a candidate's forward tell that its torch matmuls ran in TF32
(attack m12 flips the setting only inside its forward)? Prints one JSON object per op and shape and writes all
of them to --out.

    python3 bench/tf32_kernel_names.py --out $OUT/tf32_names.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from drk.gym.common import harness  # noqa: E402


def kernels(fn) -> list[str]:
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def cases() -> dict:
    d = "cuda"
    a, b = torch.randn(4096, 4096, device=d), torch.randn(4096, 4096, device=d)
    x, w = torch.randn(128, 4096, device=d), torch.randn(1024, 4096, device=d)
    s, t = torch.randn(16, 256, 512, device=d), torch.randn(16, 512, 256, device=d)
    small_a, small_b = torch.randn(64, 96, device=d), torch.randn(96, 80, device=d)
    img, k = torch.randn(8, 64, 56, 56, device=d), torch.randn(128, 64, 3, 3, device=d)
    return {"mm 4096^3": lambda: a @ b, "linear 128x4096 -> 1024": lambda: F.linear(x, w),
            "bmm 16x256x512x256": lambda: torch.bmm(s, t), "mm 64x96x80": lambda: small_a @ small_b,
            "conv2d 8x64x56x56 k3 (cudnn TF32 stays on)": lambda: F.conv2d(img, k, padding=1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    rows = []
    for name, fn in cases().items():
        row = {"op": name}
        harness.pin_numerics()  # the settings every candidate runs under (convolutions at TF32, matmuls not)
        row["fp32"] = kernels(fn)
        with harness.tf32_matmuls():  # what attack m12 switches on inside its forward
            row["tf32"] = kernels(fn)
        row["only_with_tf32"] = sorted(set(row["tf32"]) - set(row["fp32"]))
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"torch": torch.__version__, "cuda": torch.version.cuda,
                       "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
