"""The candidate runner: the only process that executes candidate code (`python -m drk.gym.runner`).

It is a dumb executor driven by its judge: load a candidate, run forwards on inputs the judge sends,
time calls, profile one call. It never sees the reference program, never holds expected outputs and never
decides a verdict; what it reports is JSON plus raw tensor bytes, both parsed defensively by the judge.
It starts sandboxed (`drk.gym.sandbox`), with torch and Triton imported and (on GPU) a CUDA context and a
warmed Triton compiler, and serves many candidates until the judge recycles it.
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
import traceback


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--fd", type=int, required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--workdir", required=True)
    p.add_argument("--triton-cache", required=True)
    p.add_argument("--no-sandbox", action="store_true")
    return p.parse_args()


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        import torch
        import torch.multiprocessing  # noqa: F401  (registers CUDA IPC reductions for pickle)

        from drk.gym import harness, integrity, sandbox, tensors, triton_hooks, wire

        self.torch, self.harness, self.tensors, self.wire = torch, harness, tensors, wire
        self.device = args.device
        self.cuda = self.device.startswith("cuda")
        self.workdir = args.workdir
        self.conn = wire.connection_from_fd(args.fd)
        self.recorder = triton_hooks.LaunchRecorder()
        hooked = triton_hooks.install(self.recorder, interpret=not self.cuda)
        self.poison = False
        self._install_poison_factories()
        if self.cuda:
            torch.cuda.set_device(torch.device(self.device))
            torch.empty(1, device=self.device)
            self._warm_triton()
            # Imported now, before the tamper snapshot: importing dynamo (the profiler pulls it in)
            # rebinds torch.manual_seed and friends, which must not read as tampering later.
            import torch._dynamo  # noqa: F401
            import torch.profiler  # noqa: F401
        self.limits = sandbox.apply_limits(cpu_path=not self.cuda)
        self.policy = sandbox.Policy(self.workdir, args.triton_cache, sandbox.allowed_compilers())
        self.sandboxed = not args.no_sandbox
        self.nonce = None
        if self.sandboxed:
            sys.addaudithook(self.policy)
        self.snapshot = integrity.Snapshot(extra=hooked)
        self.inputs: dict[str, list] = {}
        self.model = None
        self.module_name = None
        self.module_file = None
        self.count = 0

    # ---- setup -------------------------------------------------------------------------------------
    def _warm_triton(self) -> None:
        """Compile and launch one tiny kernel so Triton's driver utilities and launcher toolchain are
        built before the sandbox is armed and before the first candidate is timed."""
        import triton
        import triton.language as tl

        src = ("import triton\nimport triton.language as tl\n@triton.jit\n"
               "def drk_warmup_kernel(x_ptr, n, BLOCK: tl.constexpr):\n"
               "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
               "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)\n")
        mod = self.harness.load_module(src, "drk_warmup", os.path.join(self.workdir, "drk_warmup.py"))
        x = self.torch.zeros(1000, device=self.device)
        mod.drk_warmup_kernel[(triton.cdiv(1000, 256),)](x, 1000, BLOCK=256)
        self.torch.cuda.synchronize()
        self.harness.unload_module("drk_warmup")
        self.recorder.reset()
        del tl

    def _install_poison_factories(self) -> None:
        """Allocation factories that fill new memory with NaN while `self.poison` is set, so an output
        element the candidate never wrote cannot pass as a value left behind by an earlier call."""
        torch, fill = self.torch, self.tensors.fill_poison

        def wrap(orig):
            def factory(*a, **k):
                t = orig(*a, **k)
                if self.poison and isinstance(t, torch.Tensor):
                    fill(t)
                return t
            factory.__wrapped__ = orig
            return factory

        for name in ("empty", "empty_like", "empty_strided"):
            setattr(torch, name, wrap(getattr(torch, name)))
        torch.Tensor.new_empty = wrap(torch.Tensor.new_empty)

    # ---- protocol ----------------------------------------------------------------------------------
    def reply(self, header: dict, frames: list = ()) -> None:
        header = dict(header, nonce=self.nonce)
        header["integrity"] = self.snapshot.changes()
        if self.module_name is not None and not self.policy.armed and self.sandboxed:
            header["integrity"].append("sandbox disarmed")
        header["violations"] = list(self.policy.violations)
        self.policy.violations.clear()
        self.wire.send(self.conn, header, list(frames))

    def serve(self) -> None:
        self.reply({"op": "hello", "pid": os.getpid(), "versions": self.harness.versions(), "limits": self.limits})
        while True:
            try:
                header, frames = self.wire.recv(self.conn)
            except EOFError:
                return
            op = header.get("op")
            self.nonce = header.get("nonce")
            payload = pickle.loads(frames[0]) if frames and header.get("pickled") else None
            if op == "bye":
                return
            handler = getattr(self, f"op_{op}", None)
            if handler is None:
                self.reply({"op": op, "ok": False, "error": f"unknown op {op!r}"})
                continue
            try:
                handler(header, payload)
            except Exception as e:  # a harness-level failure: report, keep serving
                self.reply({"op": op, "ok": False, "kind": "runtime_error",
                            "error": self.harness.short_error(e, self.module_file)})

    # ---- ops ---------------------------------------------------------------------------------------
    def op_load(self, h: dict, payload) -> None:
        self.op_unload({}, None, quiet=True)
        self.count += 1
        self.module_name = f"drk_candidate_{self.count}"
        self.module_file = os.path.join(self.workdir, f"{self.module_name}.py")
        self.policy.armed = True
        self.recorder.reset()
        t0 = time.perf_counter()
        try:
            mod = self.harness.load_module(h["source"], self.module_name, self.module_file)
        except SyntaxError as e:
            return self.reply({"op": "load", "ok": False, "kind": "compile_error",
                               "error": f"SyntaxError: {e.msg} (line {e.lineno})"})
        except BaseException as e:  # noqa: BLE001 - includes SystemExit from candidate code
            return self._fail_load(e, "compile_error")
        t1 = time.perf_counter()
        try:
            self.model = self.harness.build_model(mod, "ModelNew", payload["init_inputs"], h["seed"], self.device)
        except BaseException as e:  # noqa: BLE001
            return self._fail_load(e, "runtime_error")
        self.harness.sync(self.device)
        self.reply({"op": "load", "ok": True, "import_s": t1 - t0, "build_s": time.perf_counter() - t1,
                    "init_launches": self.recorder.names()})

    def _fail_load(self, e: BaseException, kind: str) -> None:
        if isinstance(e, PermissionError) and str(e).startswith("sandbox:"):
            kind = "forbidden"
        if isinstance(e, (SystemExit, KeyboardInterrupt)):
            kind, e = "runtime_error", RuntimeError(f"candidate raised {type(e).__name__} at import")
        self.reply({"op": "load", "ok": False, "kind": kind, "error": self.harness.short_error(e, self.module_file)})

    def op_unload(self, h: dict, payload, quiet: bool = False) -> None:
        self.model = None
        self.inputs.clear()
        if self.module_name:
            self.harness.unload_module(self.module_name)
        self.module_name = None
        if self.cuda:
            self.torch.cuda.synchronize()
            # Hand cached blocks back to the driver: the judge sizes the next task from free memory.
            self.torch.cuda.empty_cache()
        if not quiet:
            self.reply({"op": "unload", "ok": True})

    def op_forward(self, h: dict, payload) -> None:
        """Run the candidate once on the judge's inputs; hand back outputs (frames or IPC buffers)."""
        torch = self.torch
        key = h.get("key") or ""
        if payload.get("inputs") is not None:
            inputs = payload["inputs"]
            if key:
                self.inputs[key] = inputs
        else:
            inputs = self.inputs[key]
            if payload.get("refresh") is not None:  # same tensors, new values (output-caching check)
                for t, new in zip(inputs, payload["refresh"]):
                    if isinstance(t, torch.Tensor):
                        t.copy_(new)
        self.recorder.reset()
        self.recorder.skip = bool(h.get("skip_triton"))
        self.poison = bool(h.get("poison", True))
        if self.cuda and self.poison:
            self._poison_allocator(int(h.get("poison_bytes", 0)))
        t0 = time.perf_counter()
        try:
            outs = self.harness.forward(self.model, inputs, train=h.get("train", True), grad=h.get("grad", True))
            self.harness.sync(self.device)
        except BaseException as e:  # noqa: BLE001
            self.poison, self.recorder.skip = False, False
            return self._fail_forward(e)
        wall = time.perf_counter() - t0
        self.poison, self.recorder.skip = False, False
        frames, described = [], []
        bufs = payload.get("out_buffers")
        for i, o in enumerate(outs):
            d = self.tensors.describe(o)
            d["subclass"] = type(o).__name__ if type(o) is not torch.Tensor else ""
            d["device"] = str(o.device)
            described.append(d)
            if bufs is not None:
                if i < len(bufs) and list(bufs[i].shape) == list(o.shape) and bufs[i].dtype == o.dtype:
                    bufs[i].copy_(o)
                    d["written"] = True
            else:
                frames.append(self.tensors.to_frame(o)[1])
        if h.get("return_inputs"):
            frames += [self.tensors.to_frame(t)[1] for t in inputs if isinstance(t, torch.Tensor)]
        self.harness.sync(self.device)
        self.reply({"op": "forward", "ok": True, "outputs": described, "wall_s": wall,
                    "launches": [(x.name, x.seconds) for x in self.recorder.launches],
                    "skipped": self.recorder.skipped}, frames)

    def _poison_allocator(self, nbytes: int) -> None:
        """Leave NaN-filled blocks in the CUDA caching allocator for the candidate's next allocations."""
        if nbytes <= 0:
            return
        blk = self.torch.empty(nbytes // 4 + 1, dtype=self.torch.float32, device=self.device)
        blk.fill_(float("nan"))
        del blk

    def _fail_forward(self, e: BaseException) -> None:
        kind = "runtime_error"
        name = type(e).__name__
        if isinstance(e, PermissionError) and str(e).startswith("sandbox:"):
            kind = "forbidden"
        elif "CompilationError" in name or "CompileTimeAssertionFailure" in name or name == "PTXASError":
            kind = "compile_error"
        elif isinstance(e, (SystemExit, KeyboardInterrupt)):
            e = RuntimeError(f"candidate raised {name} in forward")
        cuda_error = self.cuda and ("CUDA error" in str(e) or "AcceleratorError" in name)
        self.reply({"op": "forward", "ok": False, "kind": kind, "cuda_error": cuda_error,
                    "error": self.harness.short_error(e, self.module_file)})

    def op_time(self, h: dict, payload) -> None:
        keys = h["keys"]
        sets = [self.inputs[k] for k in keys]
        model = self.model
        torch = self.torch

        def call(i: int):
            return model(*sets[i])

        self.recorder.reset()
        model.train(h.get("train", True))
        with torch.no_grad():
            ms = self.harness.time_calls(call, self.device, warmup=h["warmup"], trials=h["trials"],
                                         l2_flush=h["l2_flush"], n_inputs=len(sets),
                                         perturb=self.harness.floating_tensors(sets))
        self.reply({"op": "time", "ok": True, **ms, "launches": len(self.recorder.launches)})

    def op_profile(self, h: dict, payload) -> None:
        inputs = self.inputs[h.get("key", "default")]
        model = self.model
        model.train(h.get("train", True))
        with self.torch.no_grad():
            model(*inputs)  # warm: compile and autotune outside the profile
            self.recorder.reset()
            rows = self.harness.profile_forward(lambda: model(*inputs), self.device)
        self.reply({"op": "profile", "ok": True, "rows": rows[:200], "triton": self.recorder.names()})

    def op_memory(self, h: dict, payload) -> None:
        torch = self.torch
        peak = torch.cuda.max_memory_allocated() if self.cuda else 0
        if h.get("reset") and self.cuda:
            torch.cuda.reset_peak_memory_stats()
        self.reply({"op": "memory", "ok": True, "peak_bytes": peak})


def main() -> None:
    args = _args()
    os.chdir(args.workdir)
    from drk.gym.sandbox import set_pdeathsig

    set_pdeathsig()
    try:
        runner = Runner(args)
    except BaseException:  # startup failure: tell the judge on stderr, exit non-zero
        traceback.print_exc()
        sys.exit(3)
    runner.serve()
    os._exit(0)  # skip interpreter teardown: candidate objects may have broken finalizers


if __name__ == "__main__":
    main()
