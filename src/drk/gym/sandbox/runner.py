"""The candidate runner: the only code that executes candidate code.

It runs in a process forked for one candidate by the slot's fork server (`drk.gym.sandbox.zygote`), already
inside the OS sandbox and unprivileged, and serves that one candidate: load it, run forwards on inputs the
judge sends, time calls, profile one call; then the process is killed. It never sees the reference
program, never holds expected outputs and never decides a verdict; what it reports is JSON plus raw tensor
bytes, both parsed defensively by the judge. Everything it reports can be forged by the candidate, which
shares its interpreter: the judge trusts only what it checks itself (outputs, its own clock) and treats
the rest as hints. The audit hook and tamper snapshot here are an early layer with clear messages, not a
boundary.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import pickle
import sys
import time
import traceback
import weakref


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        import torch

        from drk.gym.common import compare, harness, tensors, wire  # all before candidate code (the snapshot)
        from drk.gym.sandbox import audit as sandbox
        from drk.gym.sandbox import integrity, triton_hooks

        self.stamps = dict(args.stamps, runner=time.monotonic())  # monotonic times of the start's steps (hello)
        self.torch, self.harness, self.tensors, self.wire = torch, harness, tensors, wire
        self.input_state = compare.input_state
        self.device = args.device
        self.cuda = self.device.startswith("cuda")
        self.workdir = args.workdir
        self.conn = wire.connection_from_fd(args.fd)
        import socket

        # made now, before the audit hook is armed: receiving the CUDA path's memory files needs a socket object
        self.fd_sock = socket.fromfd(args.fd, socket.AF_UNIX, socket.SOCK_STREAM)
        self.numerics = harness.pin_numerics()
        self.policy = sandbox.Policy(self.workdir, args.triton_cache, sandbox.allowed_compilers())
        self.recorder = triton_hooks.LaunchRecorder()  # made on the thread that runs every op
        hooked = triton_hooks.install(self.recorder, interpret=not self.cuda)
        if self.cuda and args.modules_fd >= 0:  # the exec guard is on: Triton's launchers come from the judge
            from drk.gym.sandbox.launchers import JudgeBuiltModules

            JudgeBuiltModules(args.modules_fd, args.module_folders, self.policy.violations).install()
        if self.cuda and args.ptxas_fd >= 0:  # no program may start here: ptxas runs in the helper made for it
            from drk.gym.sandbox import ptxas

            ptxas.install(args.ptxas_fd, args.ptxas_tools, self.policy.violations)
        if self.cuda and args.compile_release:
            triton_hooks.compile_outside_hold(self.recorder, self._gpu_event)
        self.poison = False
        self._install_poison_factories()
        if self.cuda:
            torch.cuda.set_device(torch.device(self.device))
            torch.empty(1, device=self.device)
            self.stamps["cuda"] = time.monotonic()
            self._warm_triton()
            self.stamps["triton"] = time.monotonic()
            # Imported now, before the tamper snapshot: importing dynamo (the profiler pulls it in)
            # rebinds torch.manual_seed and friends, which must not read as tampering later.
            import torch._dynamo  # noqa: F401
            import torch.profiler  # noqa: F401

            self.start_profiler = harness.profiler_factory()
            self.start_profiler().stop()  # the first start loads CUPTI: paid here, before any candidate
            self.stamps["profiler"] = time.monotonic()
        self.nonce = None
        self._mapped = None  # the judge's exchange file, mapped once (drk.gym.common.shm)
        if sandbox.audit_enabled():  # the early layer; the OS sandbox is the fork server's
            sys.addaudithook(self.policy)
        self.snapshot = integrity.Snapshot(extra=hooked)
        self.stamps["snapshot"] = time.monotonic()
        self.inputs: dict[str, list] = {}
        # of each output of the last forward: (weak reference to the tensor it came from, its offset, shape and
        # stride there, a sample of its values), for `_earlier_outputs_overwritten`
        self.returned: list[tuple] = []
        self.model = None
        self._build: tuple | None = None  # (module, init inputs, seed) of the loaded candidate
        self.module_name = None
        self.module_file = None
        self.count = 0
        self._kept: dict[str, object] = {}  # op -> the stopped profiler of its last run (time, profile), for `op_rows`
        self.ambient = False       # one profiler across the ops that read no rows (the judge's load header says)
        self._ambient = None
        self._profiling = torch._C._autograd._profiler_enabled if self.cuda else None  # bound before any candidate

    # ---- setup -------------------------------------------------------------------------------------
    def _warm_triton(self) -> None:
        """Launch the warm-up kernel (its binary and Triton's launcher come from the copied base cache)
        so the first timed candidate call pays no tool-chain start-up."""
        self.harness.warm_triton(self.device, self.workdir)
        self.recorder.reset()

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

    def _gpu_event(self, op: str) -> None:
        """Tell the judge a compile starts (`gpu_leave`) or ended (`gpu_enter`: wait for its `gpu_go`, sent once
        it holds the GPU again, before the kernel is loaded and launched). Outside an op: nothing to tell."""
        if self.nonce is None:
            return
        self.wire.send(self.conn, {"op": op, "nonce": self.nonce})
        if op == "gpu_enter":
            header, _ = self.wire.recv(self.conn)
            if header.get("op") != "gpu_go" or header.get("nonce") != self.nonce:
                raise RuntimeError("the evaluator's channel is out of step (a compile's go never came)")

    # ---- protocol ----------------------------------------------------------------------------------
    def reply(self, header: dict, frames: list = ()) -> None:
        header = dict(header, nonce=self.nonce)
        header["integrity"] = self.snapshot.changes()
        if self.module_name is not None and not self.policy.armed:
            header["integrity"].append("sandbox disarmed")
        changed = self.harness.numerics_changed(self.numerics)
        if changed:
            header["integrity"].append(f"numeric settings changed ({changed})")
        if self.recorder.foreign:  # the first reply that says so ends the evaluation (`forbidden`)
            self.policy.violations.append(f"{self.recorder.foreign} Triton launch(es) from a thread other than "
                                          "the one the evaluator called the forward on (launch every kernel "
                                          "from the forward itself)")
        header["violations"] = list(self.policy.violations)
        self.policy.violations.clear()
        self.wire.send(self.conn, header, list(frames))

    def serve(self) -> None:
        self.reply({"op": "hello", "pid": os.getpid(), "versions": self.harness.versions(), "uid": os.getuid(),
                    "numerics": self.numerics, "stamps": self.stamps})
        while True:
            try:
                header, frames = self.wire.recv(self.conn)
            except EOFError:
                return
            op = header.get("op")
            self.nonce = header.get("nonce")
            if header.get("nfds"):
                header["_fds"] = self.wire.recv_fds(self.conn, int(header["nfds"]), self.fd_sock)
            payload = pickle.loads(frames[0]) if frames and header.get("pickled") else None
            if op == "bye":
                return
            handler = getattr(self, f"op_{op}", None)
            if handler is None:
                self.reply({"op": op, "ok": False, "error": f"unknown op {op!r}"})
                continue
            try:
                self.run_op(handler, header, payload)
            except Exception as e:  # a harness-level failure: report, keep serving
                if isinstance(e, self.harness.Refused):
                    self.reply({"op": op, "ok": False, "kind": "hacked", "error": str(e)})
                else:
                    self.reply({"op": op, "ok": False, "kind": "runtime_error",
                                "error": self.harness.short_error(e, self.module_file)})

    def run_op(self, handler, header: dict, payload) -> None:
        """One op; on CUDA inside a device profiler started before the op and stopped after it, for every
        op alike (loading, forwards, probes, timing, profile): a candidate that asks whether it is profiled
        always hears yes, so the calls that measure its coverage are the ones that are timed and checked.
        The time and profile ops keep their stopped profiler for `op_rows`, each its own: the judge runs both
        while it holds the GPU exclusively and reads their activity after it let go."""
        if not self.cuda or header.get("op") == "settle":  # settle runs no candidate code
            return handler(header, payload)
        if header.get("op") == "load":
            self.ambient = header.get("profiler") == "ambient"
        if self.ambient and header.get("op") not in ROWS_READ_AFTER:
            self._ambient_op(handler, header, payload)
            return
        self._stop_ambient()  # one profiler at a time in a process: the op's own starts on a clean slate
        self._kept.pop(header.get("op"), None)  # a failed op leaves nothing to read, not its predecessor's
        prof = self.start_profiler()
        try:
            handler(header, payload)
        finally:
            try:
                prof.stop()
            except Exception:  # noqa: BLE001  (candidate code stopped or replaced the profiler)
                self.policy.violations.append("candidate code stopped or replaced the evaluator's profiler")
                prof = None
        if header.get("op") in ROWS_READ_AFTER:  # it succeeded: its device activity is read later (`op_rows`)
            self._kept[header["op"]] = prof if prof is not None else "stopped"

    def _ambient_op(self, handler, header: dict, payload) -> None:
        """An op whose device activity nobody reads runs under the one profiler kept across such ops (each
        start and stop of a device profiler costs host time, and an evaluation has dozens of ops): the
        candidate still always hears that it is profiled. A profiler found off after an op was stopped by
        candidate code: a violation, and a new one is started."""
        if self._ambient is None:
            self._ambient = self.start_profiler()
        try:
            handler(header, payload)
        finally:
            if not self._profiling():
                self.policy.violations.append("candidate code stopped or replaced the evaluator's profiler")
                self._ambient = self.start_profiler()

    def op_settle(self, h: dict, payload) -> None:
        """Stop the ambient profiler now, so that the next op (a timed one) does not pay for it."""
        self._stop_ambient()
        self.reply({"op": "settle", "ok": True})

    def _stop_ambient(self) -> None:
        if self._ambient is None:
            return
        prof, self._ambient = self._ambient, None
        try:
            prof.stop()
        except Exception:  # noqa: BLE001  (candidate code stopped or replaced the profiler)
            self.policy.violations.append("candidate code stopped or replaced the evaluator's profiler")

    # ---- ops ---------------------------------------------------------------------------------------
    def op_load(self, h: dict, payload) -> None:
        self.op_unload({}, None, quiet=True)
        self.count += 1
        self.module_name = f"drk_candidate_{self.count}"
        self.module_file = os.path.join(self.workdir, f"{self.module_name}.py")
        if h.get("_fds"):  # the judge's exchange file, mapped (and its descriptor gone) before candidate code
            from drk.gym.common.shm import Mapped

            self._mapped = Mapped.open(self._mapped, h["_fds"][0], h, pin=self.cuda)
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
        self._build = (mod, payload["init_inputs"], h["seed"])  # to build it again (`fresh_model`)
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
        self.model, self._build = None, None
        self.inputs.clear()
        if self.module_name:
            self.harness.unload_module(self.module_name)
        self.module_name = None
        if self.cuda:
            self.torch.cuda.synchronize()
            # Hand cached blocks back to the driver: memory not in use belongs to the device's other work.
            self.torch.cuda.empty_cache()
        if not quiet:
            self.reply({"op": "unload", "ok": True})

    def op_forward(self, h: dict, payload) -> None:
        """Run the candidate once on the judge's inputs; its outputs go into their slots of the memory file."""
        torch = self.torch
        key = h.get("key") or ""
        # Tensors come in the judge's sealed memory file (drk.gym.common.shm); the pickled list holds the rest
        from drk.gym.common.shm import Mapped

        if h.get("_fds"):  # the exchange file comes with load only, never to a process holding candidate code
            for fd in h["_fds"]:
                os.close(fd)
            raise RuntimeError("the exchange file is sent with load only")
        t_in = time.perf_counter()
        mapped = self._mapped = Mapped.open(self._mapped, None, h, pin=self.cuda)
        shared = iter(mapped.input_tensors(self.device))
        fresh = [next(shared) if isinstance(x, str) and x == SHM_TENSOR else x
                 for x in (payload.get("inputs") or payload.get("refresh") or [])]
        if payload.get("inputs") is not None:
            inputs = self.tensors.to_device(fresh, self.device)
            if key:
                self.inputs[key] = inputs
        else:
            inputs = self.inputs[key]
            if payload.get("refresh") is not None:  # same tensors, new values (output-caching check)
                for t, new in zip(inputs, fresh):
                    if isinstance(t, torch.Tensor):
                        # through an alias of the storage that is not a view (its own version counter): the
                        # kept tensor's x._version stays what a fresh input shows, so this call looks like
                        # every other one
                        alias = on_storage(t.untyped_storage(), t.dtype, t.storage_offset(), t.size(), t.stride())
                        with torch.no_grad():
                            alias.copy_(new)
        # The inputs' digest before and after the forward: whether it wrote into them (a convention check this
        # process reports, so candidate code can forge it; no reward term rests on it, docs/hack-defences.md)
        checked = [x for x in inputs if isinstance(x, torch.Tensor)] if h.get("inputs_check") else None
        before = self.input_state(checked) if checked is not None else None
        if h.get("fresh_model"):  # a task whose model keeps state between calls: this call from the model as built
            try:
                mod, init_inputs, seed = self._build
                self.model = self.harness.build_model(mod, "ModelNew", init_inputs, seed, self.device)
            except BaseException as e:  # noqa: BLE001
                return self._fail_forward(e)
        self.recorder.reset()
        self.recorder.skip = bool(h.get("skip_triton"))
        self.poison = bool(h.get("poison", True))
        t_poison = time.perf_counter()
        if self.cuda and self.poison:
            self._poison_allocator(int(h.get("poison_bytes", 0)))
        t0 = time.perf_counter()
        try:
            roots: list = []  # the tensors the forward returned (or those they view), for `returned`
            # a call with the kernels skipped leaves the buffers (running statistics) as it found them: its
            # updates are garbage the next eval-mode call would read (the judge does the same for its reference)
            with self.harness.buffers_kept(self.model) if self.recorder.skip else contextlib.nullcontext():
                outs = self.harness.forward(self.model, inputs, train=h.get("train", True),
                                            grad=h.get("grad", True), plain=True, roots=roots)
                # The outputs are read (below, each copy ordered on the caller's stream) as the module's caller
                # would read them: work left on a stream the caller's stream never waited for is not in them (the
                # poisoned allocation shows instead), so an unjoined side stream is a race judged `incorrect`
                self.harness.stream_sync(self.device)
        except BaseException as e:  # noqa: BLE001
            self.poison, self.recorder.skip = False, False
            return self._fail_forward(e)
        wall = time.perf_counter() - t0
        self.poison, self.recorder.skip = False, False
        t_out = time.perf_counter()
        described = []
        for i, o in enumerate(outs[:MAX_OUTPUTS]):
            d = self.tensors.describe(o)
            d["subclass"] = type(o).__name__ if type(o) is not torch.Tensor else ""
            d["device"] = str(o.device)
            described.append(d)
            d["written"] = mapped.write_output(i, o)
        try:
            # the rest of the device's work before the inputs are read: a write into them from any stream is seen
            # by the mutation check, and its errors are this forward's
            self.harness.sync(self.device)
        except BaseException as e:  # noqa: BLE001
            return self._fail_forward(e)
        t_back = time.perf_counter()
        changed = self.input_state(checked) != before if checked is not None else None
        t_reuse = time.perf_counter()
        overwritten = self._earlier_outputs_overwritten(inputs)
        # weakly: only what the candidate itself keeps stays alive (the detached copies above die with this op);
        # each output's own place in that tensor's memory, so writes elsewhere in a buffer it views are not counted
        self.returned = [(weakref.ref(r), (o.storage_offset(), tuple(o.shape), o.stride()), value_sample(o))
                         for r, o in zip(roots[:MAX_OUTPUTS], outs)]
        del roots
        written = None if self.cuda else self.recorder.written_share(list(outs[:MAX_OUTPUTS]))
        t_end = time.perf_counter()
        # where this process's part of the call went, for finding what makes the checks slow: the reader's only
        spent = {"inputs": t_poison - t_in, "poison": t0 - t_poison, "forward": wall, "outputs": t_back - t_out,
                 "inputs_check": t_reuse - t_back, "reuse_check": t_end - t_reuse}
        self.reply({"op": "forward", "ok": True, "outputs": described, "n_outputs": len(outs), "wall_s": wall,
                    "launches": [(x.name[:200], x.seconds) for x in self.recorder.launches[:1000]],
                    "skipped": self.recorder.skipped, "inputs_changed": changed, "written_share": written,
                    "outputs_overwritten": overwritten, "spent": spent})

    def _earlier_outputs_overwritten(self, inputs: list) -> bool:
        """Did this call write into a tensor the previous forward returned, which the candidate kept (a module
        that returns one buffer it fills on every call: its caller's earlier outputs silently change, attack s07)?
        Only tensors still alive are checked (a freed one's memory is the allocator's to reuse), by their values
        (a few spread over each, compared bit for bit), and never one sharing memory with an input the judge
        refreshes in place (a module that returns its input, changed in place)."""
        held = {t.untyped_storage().data_ptr() for group in [inputs, *self.inputs.values()] for t in group
                if isinstance(t, self.torch.Tensor)}
        for ref, (offset, shape, stride), before in self.returned:
            root = ref()
            if root is None or before is None or root.untyped_storage().data_ptr() in held:
                continue
            try:  # the earlier output, where it lies now
                output = on_storage(root.untyped_storage(), before.dtype, offset, shape, stride)
            except (RuntimeError, TypeError, ValueError):  # its memory shrank or changed layout: not this check's
                continue
            now = value_sample(output)
            if now is not None and not same_bits(now, before):
                return True
        return False

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
        if isinstance(e, self.harness.Refused):
            kind = "hacked"
        elif isinstance(e, PermissionError) and str(e).startswith("sandbox:"):
            kind = "forbidden"
        elif "CompilationError" in name or "CompileTimeAssertionFailure" in name or name == "PTXASError":
            kind = "compile_error"
        elif isinstance(e, (SystemExit, KeyboardInterrupt)):
            e = RuntimeError(f"candidate raised {name} in forward")
        cuda_error = self.cuda and ("CUDA error" in str(e) or "AcceleratorError" in name)
        error = str(e) if kind == "hacked" else self.harness.short_error(e, self.module_file)
        self.reply({"op": "forward", "ok": False, "kind": kind, "cuda_error": cuda_error, "error": error})

    def op_time(self, h: dict, payload) -> None:
        keys = h["keys"]
        sets = [self.inputs[k] for k in keys]
        model = self.model
        torch = self.torch

        plain_outputs = self.harness.plain_outputs

        def call(i: int):  # a lazy subclass would defer its work past the end event: refused in every call
            return plain_outputs(model(*sets[i]))

        self.recorder.reset()
        model.train(h.get("train", True))
        with torch.no_grad():
            ms = self.harness.time_calls(call, self.device, warmup=h["warmup"], trials=h["trials"],
                                         l2_flush=h["l2_flush"], n_inputs=len(sets),
                                         perturb=self.harness.floating_tensors(sets),
                                         host_ahead=bool(h.get("host_ahead")))
        self.reply({"op": "time", "ok": True, **ms, "launches": len(self.recorder.launches),
                    "launch_counts": self.recorder.counts()})

    def op_profile(self, h: dict, payload) -> None:
        """One call on kept inputs, under the op's own profiler (read by the next op, `op_rows`). No
        warm-up call: the trials before it compiled and autotuned for these shapes already."""
        if not self.cuda:
            raise RuntimeError("the profile op is for CUDA candidates")
        inputs = self.inputs[h.get("key", "default")]
        model = self.model
        model.train(h.get("train", True))
        self.harness.sync(self.device)
        with self.torch.no_grad():
            self.recorder.reset()
            self.harness.plain_outputs(model(*inputs))
        self.harness.sync(self.device)
        self.reply({"op": "profile", "ok": True, "triton": self.recorder.names(),
                    "launch_counts": self.recorder.counts()})

    def op_rows(self, h: dict, payload) -> None:
        """The device activity of an earlier time or profile op (`of`), read once its profiler stopped and
        at most once: a separate op, so reading it is never inside the judge's clock around the timed calls
        nor inside its exclusive hold of the GPU."""
        of = h.get("of", "time")
        prof = self._kept.pop(of, None) if of in ROWS_READ_AFTER else None
        if prof is None:
            raise RuntimeError(f"no profiled {of!r} op to read")
        if prof == "stopped":
            self.reply({"op": "rows", "ok": False, "kind": "forbidden",
                        "error": "candidate code stopped the evaluator's profiler"})
            return
        self.reply({"op": "rows", "ok": True, "rows": self.harness.device_rows(prof)[:200]})

    def op_memory(self, h: dict, payload) -> None:
        torch = self.torch
        peak = torch.cuda.max_memory_allocated() if self.cuda else 0
        if h.get("reset") and self.cuda:
            torch.cuda.reset_peak_memory_stats()
        self.reply({"op": "memory", "ok": True, "peak_bytes": peak})


ROWS_READ_AFTER = ("time", "profile")  # ops whose device activity the judge reads later, with `rows`
SHM_TENSOR = "__drk_shm_tensor__"  # stands for the next tensor of the memory file in a pickled input list
MAX_OUTPUTS = 64  # more outputs than this is no kernel's answer; the judge fails it on the count
VALUE_SAMPLE = 1024  # values of each output kept to tell whether a later call wrote into it


def on_storage(storage, dtype, offset: int, shape, stride):
    """A tensor over `storage` at `offset` with `shape` and `stride`, made anew: not a view of any tensor (its own
    version counter), so writing through it never shows in another tensor's `_version`."""
    import torch

    return torch.empty(0, dtype=dtype, device=storage.device).set_(storage, offset, shape, stride)


def value_sample(t) -> object:
    """Up to VALUE_SAMPLE of `t`'s values, spread evenly over it (a copy on its device); None where they cannot
    be read without copying the whole tensor (not contiguous, empty, or a layout without a flat view)."""
    try:
        if t.numel() == 0 or not t.is_contiguous():
            return None
        flat = t.detach().view(-1)
        return flat[::max(1, flat.numel() // VALUE_SAMPLE)][:VALUE_SAMPLE].clone()
    except (RuntimeError, TypeError, ValueError):
        return None


def same_bits(a, b) -> bool:
    """Bitwise equality (a NaN equals itself), by the values' bytes where the dtype has a byte view."""
    import torch

    try:
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    except (RuntimeError, TypeError):
        return torch.equal(a, b)


def run_candidate_process(fd: int, opts: dict, workdir: str, triton_cache: str) -> None:
    """Entry point in the forked, sandboxed child (`drk.gym.sandbox.zygote`); serves one candidate, never returns."""
    args = argparse.Namespace(fd=fd, device=opts.get("device", "cpu"), workdir=workdir, triton_cache=triton_cache,
                              modules_fd=int(opts.get("modules_fd", -1)),
                              module_folders=opts.get("module_folders") or [],
                              ptxas_fd=int(opts.get("ptxas_fd", -1)), ptxas_tools=opts.get("ptxas_tools") or [],
                              stamps=dict(opts.get("stamps") or {}),
                              compile_release=bool(opts.get("compile_release")))
    try:
        runner = Runner(args)
    except BaseException:  # startup failure: tell the judge on the log, exit non-zero
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(3)
    runner.serve()
    os._exit(0)  # skip interpreter teardown: candidate objects may have broken finalizers
