"""What the judge does while it holds the GPU exclusively (`TrialChecks.measure`, `time_references`), with the
candidate link, the lock and torch.compile replaced by doubles (the real ones need a GPU; `bench/gym_gpu.py`
measures them there). Properties: the exclusive hold stops every other worker's GPU work, so it covers only
device work that must be alone (the candidate's time and profile ops, the references' timing); torch.compile's
compilation of the reference runs before it under the shared hold, and the profilers' activity is read
after it. The references are timed before the candidate process has any code (attack q01: a thread of the
candidate's that keeps the GPU busy between its calls slows the reference, not itself)."""
from __future__ import annotations

import contextlib
import types

import pytest
import torch

from drk.gym import types as T
from drk.gym.judge import checks as C


class Link:
    """A judge as the checks see it: logs each call with the hold it was made under."""

    def __init__(self, log: list, kernel: str, time_rows_calls: int) -> None:
        self.log, self.hold = log, "none"
        self.device, self.cuda = "cuda", True
        self.ref_times = types.SimpleNamespace(get=lambda key: None, put=lambda *a: None)
        self.versions: dict = {}
        self.kernel, self.time_rows_calls = kernel, time_rows_calls
        self.profile_rows: list[dict] = []  # more device rows of the profiled forward (torch's, cuBLAS's)

    @contextlib.contextmanager
    def on_gpu(self, budget=None, *, measure: bool = False):
        prev, self.hold = self.hold, "exclusive" if measure else "shared"
        self.log.append(f"{self.hold}+")
        try:
            yield
        finally:
            self.log.append(f"{self.hold}-")
            self.hold = prev

    def call(self, header: dict, payload=None, *, deadline, fds=()):
        op = header["op"] + (f":{header['of']}" if "of" in header else "")
        self.log.append(f"{op}@{self.hold}")
        if header["op"] == "time":
            return {"ok": True, "b2b": [0.5] * 10, "stream": [0.5] * 10, "calls": 10, "warmup_calls": 2,
                    "launch_counts": {self.kernel: self.time_rows_calls}}, []
        if header["op"] == "profile":
            return {"ok": True, "launch_counts": {self.kernel: 1}}, []
        if header["op"] == "rows":
            calls = self.time_rows_calls if header["of"] == "time" else 1
            more = self.profile_rows if header["of"] == "profile" else []
            return {"ok": True, "rows": [{"name": self.kernel, "ms": 0.4 * calls, "calls": calls}] + more}, []
        return {"ok": True}, []


def checks(log: list, monkeypatch, *, time_rows_calls: int = 12) -> C.TrialChecks:
    link = Link(log, "my_kernel", time_rows_calls)
    c = C.TrialChecks.__new__(C.TrialChecks)
    c.j, c.deadline, c.device, c.cuda = link, None, "cuda", True
    c.opts = T.EvalOptions(device="cuda")
    c.res = T.EvalResult(task="t", verdict=T.OK)
    c.task = types.SimpleNamespace(model=torch.nn.Identity(), constants={}, module=None)
    c.kernel_names = {"my_kernel"}
    c.timed_work, c.timed_calls, c.timing_seed, c._refs = None, 0, 0, None
    c._ref_inputs, c._compiled, c._profile_launches = [torch.zeros(4)], None, None

    def fake_compile(model):
        def compiled(*a):
            log.append(f"compiled-call@{link.hold}")
            return model(*a)
        log.append(f"compile@{link.hold}")
        return compiled
    monkeypatch.setattr(torch, "compile", fake_compile)
    monkeypatch.setattr(C.harness, "sync", lambda device: None)
    monkeypatch.setattr(C.harness, "gpu_clocks", lambda: {})

    def ref_times():
        log.append(f"reference-times@{link.hold}")
        return 2.0, 1.5, 0.0
    c._reference_times = ref_times
    return c


def test_only_device_work_is_inside_the_exclusive_hold(monkeypatch):
    log: list = []
    c = checks(log, monkeypatch)
    c.time_references()
    c.measure(timing=True, profile=True)
    assert log == ["shared+", "compile@shared", "compiled-call@shared", "shared-",
                   "exclusive+", "reference-times@exclusive", "exclusive-",
                   "exclusive+", "profile@exclusive", "time@exclusive", "exclusive-",
                   "rows:time@none", "rows:profile@none"]
    # the time op is the hold's last: the candidate process stops its profiler (thousands of calls' activity)
    # after replying, so that stop runs after the hold is let go, not before a next op inside it
    res = c.res
    assert res.verdict == T.OK and res.runtime_ms == pytest.approx(0.5) and res.speedup == pytest.approx(4.0)
    assert res.coverage == pytest.approx(1.0)
    assert c.timed_calls == 10 + C.warmup_calls({"warmup_calls": 2}, c.opts.warmup)
    assert set(res.phase_seconds) >= {"timing", "profile", "reference_timing"}


def test_references_already_timed_take_no_exclusive_hold(monkeypatch):
    """An exclusive hold stops every other worker's GPU work and waits for theirs to drain: an evaluation
    whose reference times are all cached (every later candidate of a task, as in RL) takes none for them."""
    log: list = []
    c = checks(log, monkeypatch)
    cached = {"eager": 2.0, "compile": 1.5, "protocol": 0.01}
    def get(key):
        return next((v for m, v in cached.items() if key.endswith(f"'{m}')")), None)
    c.j.ref_times = types.SimpleNamespace(get=get, put=lambda *a: None)
    c.time_references()
    assert log == []  # no hold, no compile, no timing
    assert c._refs == (2.0, 1.5, 0.01)
    c.measure(timing=True, profile=False)
    assert log[:1] == ["exclusive+"] and log.count("exclusive+") == 1  # the candidate's own timing only
    assert c.res.speedup == pytest.approx(4.0)
    del cached["protocol"]  # one mode missing: timed, in the hold, as before
    log.clear()
    c.time_references()
    assert log == ["exclusive+", "reference-times@exclusive", "exclusive-"]


def test_the_candidate_is_never_timed_against_references_timed_beside_it(monkeypatch):
    """Timing without the references timed first is the judge's bug, never a fallback that times them now,
    while candidate code is alive."""
    log: list = []
    c = checks(log, monkeypatch)
    with pytest.raises(RuntimeError, match="references were not timed"):
        c.measure(timing=True, profile=False)
    assert not any(e.startswith("reference-times") for e in log)


class Stop(Exception):
    pass


def test_the_judge_times_the_references_before_the_candidate_loads(monkeypatch):
    """The order in `Judge._evaluate`: reference timing, then the load op that brings the candidate's code."""
    from drk.gym.judge import evaluation as E
    log: list = []

    @contextlib.contextmanager
    def on_gpu(budget=None, *, measure=False):
        yield

    def call(header, payload=None, *, deadline, fds=()):
        log.append(header["op"])
        if header["op"] == "load":
            raise Stop
        return {"ok": True}, []
    task = types.SimpleNamespace(constants={}, scaled=False, notes=[], init_inputs=[])
    judge = types.SimpleNamespace(cuda=True, device="cuda", on_gpu=on_gpu, call=call, prepare=lambda t, o: task,
                                  exchange=types.SimpleNamespace(reserve=lambda *a: None, size=0, fd=-1, serial=1),
                                  exchange_device=lambda: None, _layout_bytes=lambda t, o: 0, profiler="per-op")

    def time_references(self):
        log.append("time-references")
        self.res.phase_seconds["reference_timing"] = 0.0
    monkeypatch.setattr(E.TrialChecks, "__init__", lambda self, j, req, task, res, deadline: setattr(self, "res", res))
    monkeypatch.setattr(E.TrialChecks, "time_references", time_references)
    req = types.SimpleNamespace(options=T.EvalOptions(device="cuda"), task=None, source="", request_id="")
    with pytest.raises(Stop):
        E.Judge._evaluate(judge, req, T.EvalResult(task="t"), None)
    assert log == ["memory", "time-references", "load"]
    log.clear()
    req.options = T.EvalOptions(device="cuda", timing=False)
    with pytest.raises(Stop):
        E.Judge._evaluate(judge, req, T.EvalResult(task="t"), None)
    assert log == ["memory", "load"]


def test_timed_calls_that_skipped_the_work_are_caught_with_rows_read_after_the_hold(monkeypatch):
    """The timed-work check (each timed call ran at least half of one profiled forward's kernels) reads both
    ops' activity after the hold: 15 timed calls (warm-up included) that ran the kernel 3 times are `hacked`."""
    log: list = []
    c = checks(log, monkeypatch, time_rows_calls=3)
    c.time_references()
    c.measure(timing=True, profile=True)
    assert c.res.verdict == T.HACKED and T.TIMED_WORK_SKIPPED in c.res.flags


def test_a_tf32_matmul_in_the_profiled_forward_is_forbidden_and_a_float32_one_is_not(monkeypatch):
    """Attack m12 on a GPU: TF32 on inside the forward, off again before it returns (the settings compared after
    each call look pinned); the profiled forward's rows name cuBLAS's TF32 GEMM."""
    for name, verdict in (("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x256x32_warpgroupsize2x1x1_execute_"
                           "segment_k_off_kernel__5x_cublas", T.FORBIDDEN),
                          ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_"
                           "alignc4_execute_kernel__5x_cublas", T.OK)):
        c = checks([], monkeypatch)
        c.j.profile_rows = [{"name": name, "ms": 0.3, "calls": 1}]
        c.time_references()
        c.measure(timing=True, profile=True)
        assert c.res.verdict == verdict, (name, c.res.error)
        assert verdict == T.OK or "TF32 tensor cores" in c.res.error


def test_a_cached_compiled_reference_is_not_compiled_again(monkeypatch):
    log: list = []
    c = checks(log, monkeypatch)
    c.j.ref_times = types.SimpleNamespace(get=lambda key: 1.5 if key.endswith("'compile')") else None,
                                          put=lambda *a: None)
    c.time_references()
    c.measure(timing=True, profile=False)
    assert not any(e.startswith("compile") for e in log) and "profile@exclusive" not in log
    assert log[0] == "exclusive+" and log[-1] == "rows:time@none"


def test_a_reference_torch_compile_cannot_handle_is_timed_eager_only(monkeypatch):
    log: list = []
    c = checks(log, monkeypatch)

    def broken(model):
        raise RuntimeError("dynamo cannot trace this")
    monkeypatch.setattr(torch, "compile", broken)
    c._compile_reference()
    assert c._compiled is False and c._time_reference([torch.zeros(4)], "compile") == (None, True)
    assert "dynamo cannot trace this" in c.res.protocol["reference_timing"]["compile"]["error"]  # said, not dropped


def test_a_compiled_reference_without_a_length_is_timed(monkeypatch):
    """torch 2.11's OptimizedModule answers len() (and so truth tests) with TypeError when the model has no
    length: the compiled reference must be used by identity, never by its truth value."""
    log: list = []
    c = checks(log, monkeypatch)

    class Unsized:
        def __len__(self):
            raise TypeError("Model does not support len()")

        def __call__(self, *a):
            return a[0]
    c._compiled = Unsized()
    monkeypatch.setattr(C.harness, "time_calls", lambda *a, **k: {"b2b": [0.25] * 8, "stream": [0.25] * 4})
    assert c._time_reference([torch.zeros(4)], "compile") == (pytest.approx(0.25), True)
    assert "compile" not in c.res.protocol.get("reference_timing", {})


def _gated(median: float, held: bool) -> dict:
    n = 40
    return {"b2b": [median] * (n if not held else n // 2 + 5), "stream": [median] * 10, "calls": n + 10,
            "warmup_calls": 5, "gate": {"chunks": 4, "missed": 0 if held else 4, "held_ms": 1.0, "off": not held,
                                        "b2b_kept": n // 2 + 5 if held else n, "b2b_all": n}}


def test_a_reference_pass_whose_gate_did_not_hold_is_timed_again_and_not_cached(monkeypatch):
    """The reference is trusted code: a host-bound pass is the judge's host stalling, never the reference's
    time. It is timed again; when no pass held, the fastest stands and is not cached for later candidates."""
    log: list = []
    c = checks(log, monkeypatch)
    c.opts = T.EvalOptions(device="cuda", host_ahead=True)
    passes = iter([_gated(0.09, False), _gated(0.013, True)])
    monkeypatch.setattr(C.harness, "time_calls", lambda *a, **k: next(passes))
    assert c._time_reference([torch.zeros(4)], "eager") == (pytest.approx(0.013), True)
    note = c.res.protocol["reference_timing"]["eager"]
    assert note["passes"] == 2 and note["held"] and not note["off"]

    stuck = iter([_gated(0.09, False), _gated(0.05, False), _gated(0.07, False), _gated(0.001, True)])
    monkeypatch.setattr(C.harness, "time_calls", lambda *a, **k: next(stuck))
    assert c._time_reference([torch.zeros(4)], "eager") == (pytest.approx(0.05), False)
    assert c.res.protocol["reference_timing"]["eager"]["passes"] == C.REFERENCE_TIMING_TRIES

    put: list = []
    c.j.ref_times = types.SimpleNamespace(get=lambda key: None, put=lambda key, ms, meta: put.append(key))
    c._time_reference = lambda inputs, mode: (0.05, False)
    c._time_protocol = lambda inputs: 0.001
    del c._reference_times  # the instance's stand-in from `checks`: the real one here
    eager, _, _ = c._reference_times()
    assert eager == 0.05 and not any(k.endswith("'eager')") for k in put)
    assert any(k.endswith("'protocol')") for k in put)
