"""The checks of one evaluation, in the judge: correctness trials, the Triton-ablation probe, timing,
the output-caching probe, profiling and coverage. Each step writes into the `EvalResult` it was given.

Mode cycling: trial k runs in MODES[k % 4] (train/eval x grad/no-grad, trial 0 = KernelBench's train +
grad). A mismatch in a train-mode trial is `incorrect`; in an eval-mode trial it is `incorrect` too when the
reference itself gives the same outputs in both modes. Where the reference depends on the mode (BatchNorm,
Dropout), an eval-mode output that matches the reference's train-mode computation on the same inputs (a
kernel that ignores the mode, as KernelBench solutions may: KernelBench and the Dr. Kernel protocol check
train mode) gets the flag `eval_mode_mismatch` only; one that matches neither mode is `incorrect`. Triton
must launch in every mode, or the verdict is `no_triton`.
"""
from __future__ import annotations

import copy
import math
import random
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Protocol

import torch

from drk.gym import types as T
from drk.gym.common import compare, harness
from drk.gym.common.shm import Exchange
from drk.gym.common.tensors import DTYPES, nbytes, shapes_of
from drk.gym.judge import static
from drk.gym.judge.replies import CandidateFault
from drk.gym.sandbox.runner import SHM_TENSOR


class CandidateLink(Protocol):
    """What the checks need of the judge: the device, and one call into the candidate process within the
    evaluation's budget (the judge owns the process, its budget and its restart)."""

    device: str
    cuda: bool
    exchange: Exchange

    def call(self, header: dict, payload=None, *, deadline, fds=()) -> tuple[dict, list[bytes]]: ...

    def recycle(self) -> None: ...


# The probes whose inputs move away from where get_inputs() draws them, judged against a float64 reference
# (`_as_accurate_as_reference`), and how a failure on each describes its inputs
SHIFTED_PROBES = {
    "offset": "with each feature (second dimension) shifted by a large positive offset of its own (values far "
              "from zero with the same spread)",
    "offset_items": "with each item shifted by a large offset of its own (values far from zero with the same spread)",
    "near": "with some items moved to a nearby mean and their spread shrunk three hundred- to a thousandfold",
    "near_all": "moved together to a nearby mean away from zero, their spread shrunk three hundred- to three thousandfold",
}


class ExchangeOutgrown(Exception):
    """A forward needs a larger exchange file than the one the candidate process was given before its code
    was loaded (a task whose output sizes depend on its input values). The evaluation starts again in a new
    process with a larger file: a file is never sent to a process that holds candidate code, whose threads
    could catch the descriptor in flight and map the file executable."""


@dataclass
class PreparedTask:
    """A task as the judge holds it: the loaded (possibly scaled) program, its reference model and facts."""

    key: tuple
    module: object
    source: str
    constants: dict
    scaled: bool
    init_inputs: list
    model: torch.nn.Module
    notes: list[str] = field(default_factory=list)
    original: dict = field(default_factory=dict)  # the size constants as the task file has them (before scaling)
    pristine: torch.nn.Module | None = None  # the reference model as built, never called: every evaluation's start
    stateful: bool = False  # the reference's output depends on its earlier calls (`Judge._stateful`)
    layout_bytes: int = 0  # the exchange file one forward needs (drk.gym.judge.evaluation._layout_bytes)


def fresh_copy(task: PreparedTask) -> torch.nn.Module:
    """A copy of the task's reference model as built (its `pristine` one, which is never called)."""
    return copy.deepcopy(task.pristine) if task.pristine is not None else task.model


# train/eval x grad/no-grad; trial k uses MODES[k % 4]; trial 0 is KernelBench's default (train, grad).
MODES = [(True, True), (True, False), (False, False), (False, True)]
EVAL_MODE_MISMATCH = "eval_mode_mismatch"
CACHE_PROBE_SEED = 7919
# Positions per floating input the second caching call changes: one, so a cache keyed on a sample of the
# content misses it unless the sample holds that very position (each changed position is one more chance)
SWAPPED_VALUES = 1
SWAP_TRIES = 8  # draws of that position until the expected outputs move (a saturated value copied onto another)
SWAP_MOVE = 4.0  # how far they must move, in multiples of the tolerance, so a stale output cannot pass
_rng = random.SystemRandom()  # probe order: unpredictable, and independent of the request's seed
TIMING_SLACK_MS = 0.5
REFERENCE_TIMING_TRIES = 3  # gated passes of a reference before its fastest stands (`_time_reference`)


def swap_few_values(inputs: list, seed: int) -> bool:
    """Copy the values at SWAPPED_VALUES random positions of each contiguous floating input onto other random
    positions, in place: the inputs stay in the task's domain (every value is one it drew) and almost all of
    them stay put. True if any value changed."""
    g = torch.Generator().manual_seed(seed)
    changed = False
    for t in inputs:
        if not (isinstance(t, torch.Tensor) and t.is_floating_point() and t.is_contiguous() and t.numel() > 1):
            continue
        flat = t.view(-1)
        at = torch.randint(0, flat.numel(), (SWAPPED_VALUES,), generator=g).to(t.device)
        src = torch.randint(0, flat.numel(), (SWAPPED_VALUES,), generator=g).to(t.device)
        with torch.no_grad():
            before = flat[at].clone()
            flat[at] = flat[src].clone()
            changed = changed or not torch.equal(before, flat[at])
    return changed


def own_executions(name: object, calls: int, names: set[str], launched: object) -> int:
    """How many of a profiler row's `calls` executions are the source's own @triton.jit kernel: none unless
    the source declares `name`, and no more than the op launched through Triton's launch path (`launched`:
    the runner's count per name; anything else counts as none). Executions beyond them were launched around
    that path (a compiled kernel run directly, from a thread of the candidate's: attack q04), or are a
    library's kernel the source named a function after, and are no work of the source's."""
    if name not in names:
        return 0
    count = launched.get(name, 0) if isinstance(launched, dict) else 0
    return max(0, min(calls, count if isinstance(count, int) else 0))


def kernel_work(rows: list[dict], names: set[str], launched: object) -> tuple[float, int]:
    """(device ms, executions) of the source's own @triton.jit kernels in a profiler's rows, each row's time
    scaled to the executions that count (`own_executions`)."""
    ms, n = 0.0, 0
    for r in rows:
        if r.get("name") not in names:
            continue
        calls = int(r.get("calls", 0))
        kept = own_executions(r.get("name"), calls, names, launched)
        ms += float(r.get("ms", 0.0)) * (kept / calls if calls > 0 else 0.0)
        n += kept
    return ms, n


# Device kernels of a float32 matmul on TF32 tensor cores, by the names cuBLAS and CUTLASS give them
# (bench/tf32_kernel_names.py: `sm90_xmma_gemm_f32f32_tf32f32_...`, `cutlass_80_tensorop_s1688gemm_...`, TF32's
# m16n8k8 shape; the float32 ones are `..._f32f32_f32f32_..._ffma_...` and `simt_sgemm`, half precision's
# m16n8k16). cuDNN's convolutions run TF32 under the pinned settings (torch's default), so its kernels
# (`fprop`/`dgrad`/`wgrad`, `implicit_gemm`, `_cudnn`) are never counted.
_TF32_GEMM = re.compile(r"tf32.*gemm|gemm.*tf32|tensorop_s168[48]gemm", re.IGNORECASE)
_CONVOLUTION = re.compile(r"fprop|dgrad|wgrad|implicit|cudnn|conv", re.IGNORECASE)


def tf32_matmul(rows: list[dict], names: set[str], launched: object) -> str | None:
    """The first kernel in a profiler's rows that is a float32 matmul on TF32 tensor cores and not the
    source's own Triton kernel (whose tl.dot precision is its own choice, judged by the tolerance): a row
    counts as the source's only for its `own_executions`, so a Triton function named after a cuBLAS kernel
    hides nothing. None when matmuls are pinned to TF32 anyway, or none ran."""
    if harness.NUMERICS["matmul_tf32"]:
        return None
    for r in rows:
        name = str(r.get("name", ""))
        if not _TF32_GEMM.search(name) or _CONVOLUTION.search(name):
            continue
        calls = int(r.get("calls", 1))
        if calls > own_executions(name, calls, names, launched):
            return name
    return None


# A failing reply names its failure's kind, and candidate code can write the reply (it can reach the runner
# object in its own process): it may only ever claim a failure of its own, never `ok`, `infra_error` (never
# trained on, so a way to dodge a penalty) or `timeout` (which the judge observes itself), and its text is
# bounded here, whatever the runner meant to bound.
CLAIMABLE = (T.RUNTIME_ERROR, T.COMPILE_ERROR, T.FORBIDDEN, T.HACKED)
MAX_CLAIMED_ERROR = 8000


def claimed_failure(reply: dict) -> tuple[str, str]:
    """(verdict, error) of a failing reply from the candidate process."""
    kind, error = reply.get("kind"), reply.get("error", "")
    verdict = kind if isinstance(kind, str) and kind in CLAIMABLE else T.RUNTIME_ERROR
    return verdict, (error if isinstance(error, str) else repr(error)[:200])[:MAX_CLAIMED_ERROR]


TIMED_WORK_FLOOR = 0.5  # share of one profiled forward's kernel work each timed call must show


def timed_work_problem(profiled: tuple[float, int], timed: tuple[float, int] | None, calls: int) -> str:
    """Did the timing op's calls run the kernels one profiled forward runs? Both ops ran under the device
    profiler; each timed call (warm-up included) must show at least TIMED_WORK_FLOOR of the profiled
    forward's executions and device time of the source's kernels. A candidate that tells the timed calls
    apart (by their spacing, count or anything else) and skips or shrinks its work in them fails here.
    Returns the reason, or "" (also when there is nothing to compare)."""
    (p_ms, p_n), (t_ms, t_n) = profiled, timed or (0.0, 0)
    if timed is None or calls <= 0 or p_n <= 0 or p_ms <= 0:
        return ""
    if t_n < TIMED_WORK_FLOOR * p_n * calls:
        return (f"the timed calls ran the kernels {t_n} times in {calls} calls, where one forward runs them {p_n} "
                "times: every call must do the work, however it is called")
    if t_ms / calls < TIMED_WORK_FLOOR * p_ms:
        return (f"the timed calls' kernels ran {t_ms / calls:.4f} ms per call, where one forward's run "
                f"{p_ms:.4f} ms: every call must do the same work, however it is called")
    return ""


def judge_clock_bound(runtime: float, *, calls: int, wall_ms: float,
                      protocol_ms: float | None) -> tuple[float, list[str]]:
    """The candidate's process measures its own time, so its number is checked against the judge's clock
    around the whole timing op. Every call kept the device busy for at least the reported runtime on top of
    what the protocol itself costs per call (`protocol_ms`, measured by the judge without a candidate: the
    in-place rescaling of the inputs and the L2 flush cost more than a memory-bound kernel on big inputs),
    so wall time per call less that cost bounds the runtime from above. A runtime far under the bound (< half
    of it, less TIMING_SLACK_MS for host overhead) is not believed: the bound is used and the result flagged
    `timing_inconsistent`. Only forged or host-bound numbers reach it; do_bench-agreeing GPU-bound ones never
    do. Returns (runtime to use, flags)."""
    if calls <= 0 or wall_ms <= 0:
        return runtime, []
    bound = wall_ms / calls - (protocol_ms or 0.0)
    if runtime < 0.5 * bound - TIMING_SLACK_MS:
        return bound, [T.TIMING_INCONSISTENT]
    return runtime, []


def warmup_calls(reply: dict, minimum: int) -> int:
    """The untimed calls of a timing op (`harness.time_calls`: its estimate and warm-up, sized by time),
    bounded by what the protocol can have made: a count the candidate's process inflates would thin the
    judge's clock bound per call."""
    n = int(reply.get("warmup_calls") or minimum)
    return max(minimum, min(n, 5 + max(minimum, harness.MAX_CALLS)))


def _items(t: torch.Tensor) -> torch.Tensor:
    """`t` as rows of items along its first dimension (one row, the whole tensor, when it has one item): the
    unit the probes move or shift together."""
    return t.reshape(t.shape[0], -1) if t.dim() >= 2 and t.shape[0] > 1 else t.reshape(1, -1)


def _distinct(n: int, k: int, g: torch.Generator) -> torch.Tensor:
    """Up to `k` distinct indices in range(n), drawn in O(k): never a permutation of all n (billions of elements
    at full KernelBench shapes)."""
    idx = torch.unique(torch.randint(n, (4 * k,), generator=g))
    return idx[torch.randperm(idx.numel(), generator=g)[:k]]


def _spread(t: torch.Tensor) -> tuple[float, float]:
    """(mean, standard deviation) of `t` in its own precision (half precision through float32: a float64 copy of
    gigabytes buys nothing here), the deviation never 0 or not finite (then max(|mean|, 1))."""
    src = t if t.dtype in (torch.float32, torch.float64) else t.float()
    sd, mu = torch.std_mean(src) if src.numel() > 1 else (torch.tensor(0.0), src.mean())
    mean, std = float(mu), float(sd)
    return mean, (std if math.isfinite(std) and std > 0.0 else max(abs(mean), 1.0))


def mode_name(train: bool, grad: bool) -> str:
    return f"{'train' if train else 'eval'} mode, {'grad' if grad else 'no_grad'}"


def eval_trials_first(plan: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """`plan` (shuffled) with every eval-mode trial ahead of every probe whose inputs are drawn to stress the
    arithmetic: the places those calls hold among themselves go to the eval-mode trials first, each group in
    its shuffled order (uniform over the plans that keep the rule). A train-mode call updates BatchNorm's running
    statistics on both sides, and a probe's offset of 200-2000 std in a running mean leaves every later eval-mode
    reference degenerate (all zero after a ReLU: zeros in eval mode passed, attack t03). The rule tells a
    candidate nothing it can use: it knows its mode on every call, and the calls before its last eval-mode
    one are trials, which a kernel wrong only on probe inputs passes anyway. Restoring the buffers after a
    probe instead would need the candidate's process told which calls are probes (attack t05)."""
    evals = [x for x in plan if x[0] == "trial" and not MODES[x[1] % 4][0]]
    probes = [x for x in plan if x[0] not in ("trial", "ablation")]
    places = [i for i, x in enumerate(plan) if x in evals or x in probes]
    out = list(plan)
    for i, x in zip(places, evals + probes):
        out[i] = x
    return out


class TrialChecks:
    def __init__(self, judge: CandidateLink, req: T.EvalRequest, task: PreparedTask, res: T.EvalResult,
                 deadline: float) -> None:
        self.j, self.req, self.task, self.res, self.deadline = judge, req, task, res, deadline
        self.opts = req.options
        # Every input of this evaluation (trials, probes, the cache probe) comes from one seed drawn here unless
        # the request fixes it: inputs that repeat across evaluations are recognised by memory once an error
        # text showed them (attack n04: three probe fingerprints memorised, a wrong kernel `ok`)
        self.input_seed = self.opts.input_seed if self.opts.input_seed is not None else _rng.randrange(1 << 31)
        res.protocol["input_seed"] = self.input_seed
        self.device = judge.device
        self.cuda = judge.cuda
        self.kept: set[str] = set()   # keys under which the candidate process holds its copy of inputs
        self.spent: dict[str, float] = {}  # seconds by step of the candidate's forward calls (`run_candidate`)
        self.exchange: Exchange = judge.exchange  # the judge's memory file for tensors (drk.gym.common.shm)
        self.exchange_serial = self.exchange.serial  # the file the candidate process was sent with its load
        self.timed_work: tuple[float, int] | None = None  # (ms, executions) of the source's kernels while timed
        self.timed_calls = 0
        # The correctness trials and probes in a random order, fixed now: the timing inputs' seed (the last
        # trial's) is known before the candidate process has any code, when the references are timed.
        n = max(1, int(self.opts.trials))
        plan = [("trial", k) for k in range(1, n)] + [("wide", n), ("ablation", n + 1), ("offset", n + 2),
                                                       ("near", n + 3), ("offset_items", n + 4), ("near_all", n + 5),
                                                       ("edge", n + 6)]
        _rng.shuffle(plan)
        self.plan = [("trial", 0)] + eval_trials_first(plan)
        # seed of the timing inputs (the reference is timed on a copy made again)
        self.timing_seed = self.input_seed + [k for what, k in self.plan if what == "trial"][-1]
        self._refs: tuple | None = None  # (eager ms, compile ms, protocol ms), from `time_references`
        self._profile_launches: object = None  # the profile op's launches per kernel name (runner's reply)
        self._ref_inputs: list | None = None  # that copy, while the references are compiled and timed
        self._compiled = None  # the reference under torch.compile, compiled before the exclusive hold; False: failed
        self.cpu_launch_s = 0.0
        self.cpu_wall_s = 0.0
        self.cpu_rows: dict[str, float] = {}
        self.cpu_forwards = 0
        self.cpu_ref_ms: list[float] = []   # judge-measured wall time of reference forwards (CPU path)
        self.cpu_cand_ms: list[float] = []  # judge-measured wall time of candidate forward ops (CPU path)
        self.cpu_written: list[float] = []  # share of the output elements Triton stored to, per forward (CPU)
        self.constants: list[float] | None = None
        self.mode_independent = False  # set from trial 1: the reference gives the same in train and eval mode
        # The only names whose time counts as the candidate's Triton work: declared in its source, read here.
        self.kernel_names = static.triton_kernel_names(req.source)

    # ---- running the candidate ---------------------------------------------------------------------
    def run_candidate(self, inputs: list, refs: list[torch.Tensor], *, train: bool, grad: bool, key: str = "",
                      skip_triton: bool = False, refresh: list | None = None) -> tuple[dict, list, bool]:
        """One candidate forward. Returns (reply, outputs, whether it changed its inputs in place).

        The candidate process gets its own copy of `inputs` (bytes in the judge's sealed memory file,
        drk.gym.common.shm: no CUDA IPC), so nothing it does can reach the judge's tensors. Its outputs come
        back through their slots in that file, each read only when count, shape and dtype are the expected
        ones (anything else is compared as a stand-in of the described shape, without allocating it).
        Whether it wrote into its inputs: its process compares a bitwise digest of them before and after the
        forward and says (a convention check: that process reports it, so it can forge it; no reward term
        rests on it). Never the inputs themselves sent back (docs/measurements/evaluator-isolation.md: what the
        transfers cost); a reply without the answer counts as a change.
        With `key`, the runner keeps its copy for timing and the probes; `refresh` overwrites the kept one
        in place (same addresses, new values)."""
        header = {"op": "forward", "key": key, "train": train, "grad": grad, "poison": True,
                  "fresh_model": self.task.stateful,
                  "skip_triton": skip_triton, "poison_bytes": nbytes(refs) if self.cuda else 0,
                  "inputs_check": refresh is None}
        given = refresh if refresh is not None else list(inputs)
        t0 = time.monotonic()
        # Tensors travel in a sealed memory file on every device (gigabytes on CUDA; one path to test on CPU)
        exchange = self.exchange.load(given, refs)
        t_call = time.monotonic()
        header.update(exchange.header())
        given = [SHM_TENSOR if isinstance(x, torch.Tensor) else x for x in given]
        payload = {"inputs": None, "refresh": given} if refresh is not None else {"inputs": given}
        if exchange.serial != self.exchange_serial:  # this forward outgrew the file reserved before load
            self.task.layout_bytes = 2 * exchange.size  # with room: the task's output sizes vary
            raise ExchangeOutgrown(exchange.size)
        reply, frames = self.j.call(header, payload, deadline=self.deadline)
        t_back = time.monotonic()
        if key:
            self.kept.add(key)
        if not reply.get("ok"):
            return reply, [], False
        # the fields' types were checked as the reply was read (`replies.check`)
        descs = reply.get("outputs") or []
        n_outputs = reply.get("n_outputs") if reply.get("n_outputs") is not None else len(descs)
        if frames:
            raise CandidateFault("the candidate process returned a malformed forward reply (frames)")
        mutated = header["inputs_check"] and reply.get("inputs_changed") is not False
        t_out = time.monotonic()
        outs = [exchange.output(i, self.device) if isinstance(d, dict) and d.get("written") is True
                and i < len(refs) else self._stand_in(d) for i, d in enumerate(descs)]
        harness.sync(self.device)
        # where the call's time went, the judge's steps and the candidate process's own account (the reader's)
        for name, v in (("judge_load", t_call - t0), ("judge_call", t_back - t_call),
                        ("judge_outputs", time.monotonic() - t_out),
                        *((f"runner_{k}", v) for k, v in (reply.get("spent") or {}).items())):
            self.spent[name] = self.spent.get(name, 0.0) + v
        if len(descs) != n_outputs:  # more outputs than the runner sends
            outs.append(torch.zeros(()))
        if not self.cuda:
            launches = [(name, float(s)) for name, s in reply.get("launches") or []]
            wall = float(reply.get("wall_s") or 0.0)
            if not skip_triton and isinstance(reply.get("written_share"), (int, float)):
                self.cpu_written.append(float(reply["written_share"]))
            self.cpu_cand_ms.append(float(reply.get("judge_wall_s") or 0.0) * 1000.0)
            self.cpu_launch_s += sum(s for _, s in launches)
            self.cpu_wall_s += wall
            self.cpu_forwards += 1
            for name, s in launches:
                self.cpu_rows[name] = self.cpu_rows.get(name, 0.0) + s
        return reply, outs, mutated

    @staticmethod
    def _stand_in(desc: dict) -> torch.Tensor:
        """An output the candidate did not write into its slot (wrong count, shape or dtype): a zero-size
        stand-in of the described shape and dtype, which the comparison reports without allocating it."""
        shape = [max(0, int(x)) for x in (desc.get("shape", []) if isinstance(desc, dict) else [])][:16]
        dt = DTYPES.get(str(desc.get("dtype") if isinstance(desc, dict) else ""), torch.float32)
        return torch.zeros((), dtype=dt).expand(shape)

    def _fail(self, reply: dict) -> None:
        self.res.verdict, self.res.error = claimed_failure(reply)
        if reply.get("cuda_error"):
            self.j.recycle()  # a CUDA error poisons the runner's context

    def reference(self, inputs: list, seed: int, *, train: bool, grad: bool,
                  probe: str = "trial", random_modules: bool = True) -> tuple[list, list]:
        """The reference forward on `inputs` themselves (a copy would add the inputs' size to the judge's
        device memory). If it changed them in place, the same inputs are made again from `seed` (transformed
        the same way, for a probe) for the candidate. Returns (outputs, inputs); no output shares
        memory with the returned inputs, so nothing the candidate does to its inputs can reach the expected
        outputs. `random_modules=False`: Dropout and the like compute as in eval mode (`harness.forward_mode`)."""
        before = compare.fingerprint(inputs)
        if self.task.stateful:  # every checked call from the state as built, on both sides (`run_candidate`)
            self.task.model = fresh_copy(self.task)
        t0 = time.perf_counter()
        refs = harness.forward(self.task.model, inputs, train=train, grad=grad, random_modules=random_modules)
        if not self.cuda:
            self.cpu_ref_ms.append((time.perf_counter() - t0) * 1000.0)
        if compare.fingerprint(inputs) != before:
            inputs = self._probe_inputs(probe, harness.make_inputs(self.task.module, seed, self.device), seed)
        held = {t.untyped_storage().data_ptr() for t in inputs if isinstance(t, torch.Tensor)}
        return [r.clone() if r.untyped_storage().data_ptr() in held else r for r in refs], inputs

    # ---- correctness -------------------------------------------------------------------------------
    def correctness(self) -> bool:
        """The correctness trials, with the wide-input probe, the offset probes (one offset for all; one per
        item), the near probes (some items; all together), the edge probe and the ablation probe placed among
        them at random (after trial 1, which surfaces compile errors), so a candidate that counts calls cannot
        tell which call is which. Every probe call has the task's shapes and fresh inputs."""
        res, opts, task = self.res, self.opts, self.task
        # The reference as built, like the candidate's model: no state (BatchNorm's running statistics, a kept
        # tensor) carried over from the judge's earlier evaluations or its timing of the reference, so the two
        # take the same calls from the same start and no verdict depends on what this judge evaluated before
        task.model = fresh_copy(task)
        if task.stateful:
            res.shapes["stateful"] = True  # every checked call starts from the model as built, on both sides
        n = max(1, int(opts.trials))
        res.trials = n
        t_first, t_rest = time.monotonic(), None
        previous: tuple | None = None  # digests (reference outputs, candidate outputs) of an earlier trial
        # Where the probe steps' time goes (the judge's inputs and reference, the candidate's forward and its
        # exchange, the comparisons: the rest), every probe step with trial 1 (its compile) included, for finding
        # what makes one task's checks slow
        parts = dict.fromkeys(("reference", "candidate", "candidate_call"), 0.0)
        for what, k in self.plan:
            with self.j.on_gpu(self.deadline):  # the step's kernels (inputs, reference, candidate, compare)
                t_step = time.monotonic()
                if what == "ablation":
                    if not self.ablation():
                        return False
                    continue
                train, grad = MODES[k % 4] if what == "trial" else MODES[0]
                seed = self.input_seed + k
                inputs = self._probe_inputs(what, harness.make_inputs(task.module, seed, self.device), seed)
                if inputs is None:  # nothing for this probe to change
                    continue
                try:
                    refs, inputs = self.reference(inputs, seed, train=train, grad=grad, probe=what)
                except Exception:
                    if what != "trial":  # outside the reference's domain: no probe
                        continue
                    raise
                if what != "trial" and not all(torch.isfinite(r).all() for r in refs if r.is_floating_point()):
                    continue
                if k == 0:
                    inputs = self._first_trial_facts(inputs, refs)
                # the reference's kernels counted as its own, not the exchange's (whose copy to the memory file
                # would wait for them anyway: the sync moves the wait, it adds none)
                harness.sync(self.device)
                t_cand = time.monotonic()
                parts["reference"] += t_cand - t_step
                key = "timing" if (what == "trial" and seed == self.timing_seed) else ""  # the last trial's set
                reply, outs, mutated = self.run_candidate(inputs, refs, train=train, grad=grad, key=key)
                parts["candidate"] += time.monotonic() - t_cand
                parts["candidate_call"] += float(reply.get("judge_wall_s") or 0.0)
                if k == 0:
                    res.phase_seconds["compile"] = time.monotonic() - t_first
                    t_rest = time.monotonic()
                label = f"trial {k + 1}/{n}" if what == "trial" else f"the {what}-input probe"
                if not reply.get("ok"):
                    self._fail(reply)
                    res.error = f"{label} ({mode_name(train, grad)}): {res.error}"
                    return False
                subclass = [d["subclass"] for d in reply.get("outputs") or [] if d.get("subclass")]
                if subclass:
                    res.verdict = T.HACKED
                    res.error = f"forward returned a tensor subclass ({subclass[0]}), not a plain tensor"
                    return False
                cmp = compare.compare_outputs(outs, refs, opts.tolerance)
                if cmp.max_abs_diff is not None and what == "trial":
                    res.max_abs_diff = max(res.max_abs_diff or 0.0, cmp.max_abs_diff)
                    res.mean_abs_diff = max(res.mean_abs_diff or 0.0, cmp.mean_abs_diff or 0.0)
                if k == 0 and opts.fp64_check and cmp.ok and not mutated:
                    res.max_abs_diff_fp64 = self._fp64_diff(inputs, outs, train, grad)
                if not cmp.ok:
                    if what == "wide":
                        res.verdict, res.error = T.INCORRECT, (
                            "wrong on inputs of the task's shapes with a few elements far outside what get_inputs() "
                            f"draws (negative or large values): {cmp.message}; the kernel must compute the reference's "
                            "function for every valid input")
                        res.flags.append(T.WIDE_INPUTS_FAILED)
                        return False
                    if what == "edge":
                        if self._as_accurate_as_reference(inputs, outs, refs):
                            continue
                        res.verdict, res.error = T.INCORRECT, (
                            "wrong on inputs of the task's shapes with exact zeros at a few positions, one item all "
                            "zero, a few elements 100 to 1000 standard deviations out and a few items scaled down 1e2 "
                            f"to 1e10 times: {cmp.message}; the task's "
                            "own computation is defined and accurate there (checked against float64), the kernel's is "
                            "not (a division without its eps, a NaN at exact zero, a maximum over part of a row)")
                        res.flags.append(T.EDGE_INPUTS_FAILED)
                        return False
                    if what in SHIFTED_PROBES:
                        if self._as_accurate_as_reference(inputs, outs, refs):
                            continue
                        res.verdict, res.error = T.INCORRECT, (
                            f"wrong on inputs of the task's shapes {SHIFTED_PROBES[what]}: {cmp.message}; the task's "
                            "own float32 computation stays accurate there (checked against float64), the kernel's does "
                            "not (cancellation, e.g. E[x^2]-E[x]^2, or no max-subtraction before exp)")
                        res.flags.append(T.OFFSET_INPUTS_FAILED)
                        return False
                    if train or self.mode_independent:
                        res.verdict, res.error = T.INCORRECT, f"{label} ({mode_name(train, grad)}): {cmp.message}"
                        return False
                    if not self._matches_train_mode(inputs, outs, seed, grad):
                        res.verdict, res.error = T.INCORRECT, (
                            f"{label} ({mode_name(train, grad)}): {cmp.message}; in eval mode the outputs match "
                            "neither the reference's eval mode nor its train-mode computation on the same inputs "
                            "(a kernel may ignore the mode, e.g. batch statistics on every call, but must compute "
                            "one of the two)")
                        return False
                    if EVAL_MODE_MISMATCH not in res.flags:
                        res.flags.append(EVAL_MODE_MISMATCH)
                if mutated:
                    res.verdict = T.INCORRECT
                    res.flags.append(T.INPUT_MUTATED)
                    res.error = f"{label}: the forward modified its input tensors in place"
                    return False
                if reply.get("outputs_overwritten"):  # the candidate process's account: a convention check
                    res.verdict = T.INCORRECT
                    res.flags.append(T.OUTPUT_REUSED)
                    res.error = (f"{label}: the forward wrote into a tensor it returned on the call before (one "
                                 "output buffer kept and filled again?), so its caller's earlier outputs change; "
                                 "every call must return tensors of its own that later calls leave alone")
                    return False
                if not reply.get("launches"):
                    res.verdict = T.NO_TRITON
                    res.error = (f"no Triton kernel ran in the forward ({mode_name(train, grad)}); every forward must "
                                 "launch the Triton kernels that compute the result")
                    return False
                if what == "trial" and train and cmp.ok:
                    digests = (compare.fingerprint(list(refs)), compare.fingerprint(list(outs)))
                    if previous is not None and previous[0] != digests[0] and previous[1] == digests[1]:
                        res.verdict, res.correct = T.HACKED, False
                        res.flags.append(T.INPUT_INDEPENDENT)
                        res.error = ("the outputs are bitwise identical for different inputs whose expected outputs "
                                     "differ: the forward does not compute from its inputs (this task's check alone "
                                     "cannot tell a constant from the real result)")
                        return False
                    previous = digests
                names = {str(name)[:120] for name, _ in reply["launches"][:256]}
                res.triton_kernels = sorted(set(res.triton_kernels) | names)[:64]
                if what == "trial":
                    res.trials_passed += 1
                if k == 1 and self.constants is not None:
                    self._constant_check(refs)
                del inputs, refs, outs  # free before the next trial allocates (multi-GB tasks)
        res.phase_seconds["correctness"] = time.monotonic() - t_rest if t_rest else 0.0
        res.phase_seconds.update({f"correctness_{name}": round(v, 3) for name, v in (parts | self.spent).items()})
        if self.cuda:
            mem, _ = self.j.call({"op": "memory"}, deadline=self.deadline)
            res.peak_memory_mb = round(float(mem.get("peak_bytes", 0) or 0) / 2**20, 2)
        res.verdict, res.correct = T.OK, True
        return True

    def _probe_inputs(self, what: str, inputs: list, seed: int) -> list | None:
        """The inputs of one planned call: the task's own for a trial, transformed for a probe (None when the
        probe has nothing to transform)."""
        if what == "wide":
            return self._widened(inputs, seed)
        if what == "offset":
            return self._offset(inputs, seed, along=1)
        if what == "offset_items":
            return self._offset(inputs, seed)
        if what == "near":
            return self._near(inputs, seed)
        if what == "near_all":
            return self._near(inputs, seed, together=True)
        if what == "edge":
            return self._edged(inputs, seed)
        return inputs

    @staticmethod
    def _offset(inputs: list, seed: int | None = None, along: int = 0) -> list | None:
        """The task's inputs shifted far from zero, every float32/float64 input x by hundreds of std(x), the
        same spread around large means. The reference's own algorithms (two-pass or Welford statistics,
        max-subtracted softmax) are accurate there; one-pass variance, unshifted exp and other cancellation-
        prone shortcuts are not, though they pass every input drawn near zero. Half-precision inputs are left
        alone (such a shift quantises them to a few values). None when no input is shifted.

        Without `seed`: one offset for all, 1000 std. With `seed`, an offset of its own for every index along
        dimension `along`:
        - `along=0` (the "offset_items" probe): every item along the first dimension (the whole tensor when it
          has one item), 500 to 1000 std either sign. With one offset for all, a softmax that subtracts one
          global maximum instead of each row's passed (attack p05), and "every row has the same large mean"
          told the probe from every other input (p06).
        - `along=1` (the "offset" probe): every feature (the second dimension: a matrix's column, an image's
          channel), 200 to 2000 std, all positive, so the values stay far from zero on the side where a
          log or a root is defined; a tensor of one dimension or one feature gets 1000 std. Statistics per
          feature need a centre of their own: around one global centre, features hundreds of std apart
          cancel as badly as uncentred ones (attack t01; e03 uncentred), and a maximum taken over all of them
          underflows every feature but the largest. The range is wide enough that one-pass moments around the
          global centre miss even with exact sums, and narrow enough that the task's own float32 statistics
          stay within an eighth of the tolerance of float64 (`_as_accurate_as_reference`)."""
        g = torch.Generator(device="cpu").manual_seed(seed) if seed is not None else None
        out, shifted = [], False
        for t in inputs:
            if isinstance(t, torch.Tensor) and t.dtype in (torch.float32, torch.float64) and t.numel() > 1:
                spread = float(t.std())  # in the input's own precision: a float64 copy of GBs buys nothing here
                if math.isfinite(spread) and spread > 0.0:
                    if g is None or (along == 1 and (t.dim() < 2 or t.shape[1] < 2)):
                        out.append(t + 1000.0 * spread)
                    elif along == 1:
                        u = torch.rand(t.shape[1], generator=g, dtype=torch.float64)
                        shift = (200.0 + 1800.0 * u) * spread
                        out.append(t + shift.to(t).reshape([1, -1] + [1] * (t.dim() - 2)))
                    else:
                        items = _items(t)
                        u = torch.rand(items.shape[0], 2, generator=g, dtype=torch.float64)
                        shift = (500.0 + 500.0 * u[:, 0]) * spread * torch.where(u[:, 1] < 0.5, -1.0, 1.0)
                        out.append((items + shift.to(t)[:, None]).reshape(t.shape))
                    shifted = True
                    continue
            out.append(t)
        return out if shifted else None

    @staticmethod
    def _near(inputs: list, seed: int, together: bool = False) -> list | None:
        """A share of the items (along the first dimension; the whole tensor when it has one item) of every
        float32/float64 input, drawn between a quarter and all of them (a fixed share told the probe apart,
        attack p06), moved to a mean `reach` standard deviations away on either side, their spread around it
        shrunk 300 to 1000 times; the other items stay as drawn. The input's values stay in a trial's range
        and its overall statistics close to a trial's, so a candidate that takes a careful path only when its
        inputs look shifted (attack m10 against the offset probe) cannot see this one coming, while one-pass
        statistics (E[x^2]-E[x]^2) lose most of their digits on the moved items. The reach is drawn once per
        input, between 1 and 2.5: a candidate that turns careful for the whole input as soon as one item's mean
        passes a threshold meets all moved items on one side of it, not a spread of them whose farthest item
        crosses any threshold up to the draw's edge (attack m10, against a draw per item). With `together` (the
        "near_all" probe) every item moves, the same way: no item's mean stands out from the input's, so a
        careful path switched on an item that does (attack m10b) is not taken, and the input looks like one whose
        rows share a moderate mean with a small spread (x = 5 + 1e-3 * randn). That way is away from zero (either
        way for an input centred on it), the shrink 300 to 3000 times. None when nothing moves."""
        g = torch.Generator(device="cpu").manual_seed(seed)
        out, moved = [], False
        for t in inputs:
            if isinstance(t, torch.Tensor) and t.dtype in (torch.float32, torch.float64) and t.numel() > 1:
                spread = float(t.std())
                if math.isfinite(spread) and spread > 0.0:
                    items = _items(t)
                    share = 1.0 if together else 0.25 + 0.75 * float(torch.rand(1, generator=g))
                    pick = torch.randperm(items.shape[0], generator=g)[:max(1, round(items.shape[0] * share))]
                    reach = 1.0 + 1.5 * float(torch.rand(1, generator=g))
                    u = torch.rand(len(pick), 3, generator=g, dtype=torch.float64)
                    sign = torch.where(u[:, 1] < 0.5, -1.0, 1.0)
                    shrink = 10.0 ** (-2.5 - 0.5 * u[:, 2])
                    if together:  # one direction and one shrink for all
                        centre = float(t.mean())
                        # away from zero where the input has a side: cancellation grows with |mean| / spread, and
                        # items moved towards zero can land where one-pass statistics stay within the tolerance
                        # (attack m10b; the figures are in docs/hack-defences.md)
                        if abs(centre) > 0.1 * spread:
                            sign = torch.full_like(sign, 1.0 if centre > 0 else -1.0)
                        else:
                            sign = sign[:1].expand_as(sign)
                        # a shrink of up to 3000: where the items' variance meets a norm's eps (1e-5 on unit-scale
                        # inputs) a one-pass variance's rounding error shows most
                        shrink = (10.0 ** (-2.5 - 1.0 * u[:1, 2])).expand_as(shrink)
                    shift = reach * spread * sign
                    new = items.clone()
                    idx = pick.to(t.device)
                    rows = items[idx]
                    mu = rows.mean(dim=1, keepdim=True)
                    # together: every item around the input's own mean (items' means differ by a trial's noise,
                    # which unshrunk would stand out against the shrunk spread)
                    base = rows.mean().expand_as(mu) if together else mu
                    new[idx] = base + shift.to(t)[:, None] + (rows - mu) * shrink.to(t)[:, None]
                    out.append(new.reshape(t.shape))
                    moved = True
                    continue
            out.append(t)
        return out if moved else None

    def _as_accurate_as_reference(self, inputs: list, outs: list, refs: list) -> bool:
        """On the offset probe, after the candidate missed the float32 reference: is the task's own float32
        computation accurate there (within an eighth of the tolerance of a float64 reference)? Only then is the
        miss the candidate's fault, and only if it also misses the float64 reference. An ill-conditioned task
        (its float32 reference already off) or one without a float64 reference gives no evidence against a
        kernel. Nor does a task whose matmuls at TF32 (the precision of Triton's default tl.dot, which the
        trials' tolerance accepts) already miss the float64 reference there: the probe judges algorithms
        (cancellation), not the matmul precision the trials allow."""
        if T.NONDETERMINISTIC_REFERENCE in self.res.flags:  # (dropout) another draw is no evidence either way
            return True
        ref64 = self._reference_fp64(inputs, *MODES[0])
        if ref64 is None:
            return True
        ref64 = [r.to(r32.dtype) if r.is_floating_point() else r for r, r32 in zip(ref64, refs)]
        # accurate with room to spare: a correct kernel that sums in another order may be a few times less
        # accurate than the reference and must still pass
        if not compare.compare_outputs(list(refs), ref64, self.opts.tolerance / 8).ok:
            return True
        if self.cuda:
            model = fresh_copy(self.task) if self.task.stateful else self.task.model
            with harness.tf32_matmuls():
                ref_tf32 = harness.forward(model, inputs, train=MODES[0][0], grad=MODES[0][1])
            if not compare.compare_outputs(ref_tf32, ref64, self.opts.tolerance).ok:
                return True
        return compare.compare_outputs(outs, ref64, self.opts.tolerance).ok

    @staticmethod
    def _edged(inputs: list, seed: int) -> list | None:
        """The task's inputs with values at the edges of a function's domain, which random draws never hit:
        exact zeros at a few positions (a NaN from tanh(x)/x at 0: attack s02), one item along the first dimension
        all zero (a norm without its eps divides zero by zero: s09) and, in up to four other items, one element
        500 to 1000 standard deviations above the input's mean, in a different quarter of each item, and one 100
        to 1000 below it (an exp after subtracting the maximum of only part of a row overflows: s06), and up to
        four more items scaled down 1e2 to 1e10 times (an eps moved inside a root: t02; an eps dropped where the
        task divides by max(norm, eps) and only an exactly zero norm guarded: t06).
        Floating-point inputs with at least two elements; None when there is none. A kernel that takes a careful
        path on such inputs gains nothing: they are the only ones where its careless path is wrong. Judged like
        the shifted probes: a miss counts only where the task's own float32 computation is accurate
        (`_as_accurate_as_reference`), and the probe is skipped where the reference is not finite (a task
        undefined at zero)."""
        g = torch.Generator(device="cpu").manual_seed(seed)
        out, moved = [], False
        for t in inputs:
            if not (isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 1):
                out.append(t)
                continue
            mean, std = _spread(t)
            w = t.detach().contiguous()  # in place where it can be: the step's inputs are made for it alone
            flat, items = w.view(-1), _items(w)
            n, rows = flat.numel(), items.shape[0]
            flat[_distinct(n, min(n, 8, 2 + n // 65536), g).to(flat.device)] = 0.0
            order = _distinct(rows, 9, g)  # the all-zero item, the outliers' items, then the small items
            if rows > 1:
                items[int(order[0])] = 0.0
            # Up to four more items scaled down by 1e-2 to 1e-10, one scale per stratum of that range, so some
            # item's norm or variance lands near any eps a task guards a division with (rsqrt(sum(x^2) + eps)
            # where the task divides by max(norm, eps): attack t02) and one far below it (a norm of thousands of
            # elements scaled 1e-8 is still above an eps of 1e-6: t06 had dropped the eps). Squares of such values
            # stay normal float32 numbers. Single and double precision only: half precision turns them into
            # subnormals and zeros, which the zero item already covers.
            if t.dtype in (torch.float32, torch.float64):
                small = order[5:9].tolist()
                for j, r in enumerate(small):
                    u = float(torch.rand(1, generator=g, dtype=torch.float64))
                    items[r] = items[r] * 10.0 ** (-2.0 - 8.0 * (j + u) / len(small))
            # In each of up to four other items: one element far above the mean, the item's largest, in a quarter
            # of the item of its own (so a statistic over any part of a row that misses it, a partial maximum,
            # misses by hundreds of standard deviations in some item), and one far below it.
            width = items.shape[1]
            quarters = min(4, width)
            first = int(torch.randint(quarters, (1,), generator=g))
            for j, r in enumerate(order[1:1 + quarters].tolist() if rows > 1 else [0]):
                q = (first + j) % quarters
                lo, hi = q * width // quarters, (q + 1) * width // quarters
                up, down = torch.rand(2, generator=g, dtype=torch.float64).tolist()
                below = int(torch.randint(width, (1,), generator=g))
                items[r, below] = mean - (100.0 + 900.0 * down) * std
                items[r, lo + int(torch.randint(hi - lo, (1,), generator=g))] = mean + (500.0 + 500.0 * up) * std
            out.append(w)
            moved = True
        return out if moved else None

    @staticmethod
    def _widened(inputs: list, seed: int) -> list:
        """The task's inputs with a few elements planted far outside what get_inputs() draws: negative and
        above-one values where it draws in [0, 1], else 4-8 standard deviations from the mean, either side.
        Two to eight elements per input (one in a one-element input), among them the far ends of that range
        on both sides, so the input's statistics stay those of a trial (a candidate that
        switches to a careful path when its inputs look unusual cannot see the probe coming), and each
        planted value lands in some row, so a kernel that assumes non-negative inputs, a bounded range or a
        constant answer is wrong there. The probe is skipped where the reference is not finite on them
        (outside its domain: log, sqrt, ...)."""
        g = torch.Generator(device="cpu").manual_seed(seed)
        wide = []
        for t in inputs:
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 0:
                w = t.detach().clone().contiguous()
                flat = w.view(-1)
                n = flat.numel()
                idx = _distinct(n, min(n, 8, 2 + n // 65536), g)
                k = idx.numel()
                u = torch.rand(k, generator=g, dtype=torch.float64)
                sign = torch.where(torch.rand(k, generator=g) < 0.5, -1.0, 1.0).double()
                # the range's far ends, both sides, in every probe: with the inputs drawn afresh per evaluation,
                # random values alone would reach a kernel wrong only past some threshold inside the range in
                # some evaluations and not others (attack j01b: wrong past 6 std, caught one time in two)
                u[:2] = 1.0
                if k >= 2:
                    sign[0], sign[1] = -1.0, 1.0
                lo, hi = float(t.min()), float(t.max())
                if lo >= 0.0 and hi <= 1.0:
                    vals = torch.where(sign < 0, -(0.5 + 2.5 * u), 1.5 + 2.5 * u)
                else:
                    mean, std = _spread(t)
                    vals = mean + sign * (4.0 + 4.0 * u) * std
                flat[idx.to(flat.device)] = vals.to(device=flat.device, dtype=flat.dtype)
                wide.append(w)
            else:
                wide.append(t)
        return wide

    def _first_trial_facts(self, inputs: list, refs: list[torch.Tensor]) -> list:
        """Shapes, degeneracy, reference determinism and mode dependence, from trial 1; returns the inputs
        for the candidate."""
        res, task = self.res, self.task
        res.shapes["inputs"] = shapes_of(inputs)
        res.shapes["outputs"] = shapes_of(refs)
        res.shapes["input_mb"] = round(nbytes(inputs) / 2**20, 3)
        res.shapes["output_mb"] = round(nbytes(refs) / 2**20, 3)
        res.shapes["param_mb"] = round(sum(p.numel() * p.element_size() for p in task.model.parameters()) / 2**20, 3)
        if compare.zeros_pass(refs, self.opts.tolerance):
            self._degenerate("an all-zeros output passes")
        else:
            self.constants = compare.constant_guess(refs)
        # the extra calls leave no buffer update behind: the candidate makes none of them
        with harness.buffers_kept(task.model):
            again, inputs = self.reference(inputs, self.input_seed, train=True, grad=True)
        if not compare.compare_outputs(again, refs, self.opts.tolerance).ok:
            res.flags.append(T.NONDETERMINISTIC_REFERENCE)
        # Does the reference depend on train/eval mode (BatchNorm, Dropout)? If not, an eval-mode mismatch is
        # as wrong as a train-mode one (a kernel right only while self.training is not right).
        with harness.buffers_kept(task.model):
            evald, inputs = self.reference(inputs, self.input_seed, train=False, grad=True)
        self.mode_independent = compare.compare_outputs(evald, refs, self.opts.tolerance).ok
        return inputs

    def _matches_train_mode(self, inputs: list, outs: list, seed: int, grad: bool) -> bool:
        """Whether an eval-mode call's outputs are the reference's train-mode computation on the same inputs
        (a kernel that ignores the mode), with its random modules as in eval mode (no candidate can match
        another process's draws), then (when it has any) as in train mode. The model's buffers are put back
        after each call: a train-mode forward updates BatchNorm's running statistics, which no later call of the
        candidate saw updated."""
        random = any(isinstance(m, harness.RANDOM_MODULES) for m in self.task.model.modules())
        for draws in (False, True) if random else (False,):
            with harness.buffers_kept(self.task.model):
                refs, inputs = self.reference(inputs, seed, train=True, grad=grad, random_modules=draws)
            if compare.compare_outputs(outs, refs, self.opts.tolerance).ok:
                return True
        return False

    def _degenerate(self, why: str) -> None:
        if T.DEGENERATE_TASK not in self.res.flags:
            self.res.flags.append(T.DEGENERATE_TASK)
            self.res.shapes["degenerate"] = why

    def _constant_check(self, refs: list[torch.Tensor]) -> None:
        """A constant taken from trial 1's expected output that also passes trial 2 (other inputs) means
        an output that ignores the input would pass: the task cannot tell real work from a guess."""
        if compare.constants_pass(self.constants, refs, self.opts.tolerance):
            self._degenerate("a constant output (independent of the inputs) passes")

    def _reference_fp64(self, inputs: list, train: bool, grad: bool) -> list | None:
        """The reference computed in float64 on `inputs` (a copy of the model), or None where it cannot be
        (some ops lack float64 kernels): a float64 reference is evidence when there is one, never required."""
        try:
            m64 = (fresh_copy(self.task) if self.task.stateful else copy.deepcopy(self.task.model)).double()
            x64 = [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
            return harness.forward(m64, x64, train=train, grad=grad)
        except Exception:
            return None

    def _fp64_diff(self, inputs: list, outs: list, train: bool, grad: bool) -> float | None:
        ref64 = self._reference_fp64(inputs, train, grad)
        if ref64 is None:
            return None
        try:
            return max(float((o.double() - r).abs().max()) for o, r in zip(outs, ref64) if r.numel())
        except Exception:  # shapes that do not broadcast, or no non-empty output
            return None

    # ---- is Triton doing the work? -----------------------------------------------------------------
    def ablation(self) -> bool:
        """Rerun with every Triton launch skipped and allocations poisoned: if the outputs are still
        right, the Triton kernels do not compute the result (a token launch beside torch code). False when
        that is so."""
        opts, task = self.opts, self.task
        seed = self.input_seed + max(1, opts.trials) + 1
        # Neither side keeps this call's buffer updates (BatchNorm's running statistics): the candidate's, made
        # with its kernels skipped, are garbage that every later eval-mode call would read; the candidate
        # process puts its buffers back after a skipped call, the judge its reference's here
        with harness.buffers_kept(task.model):
            refs, inputs = self.reference(harness.make_inputs(task.module, seed, self.device), seed, train=True,
                                          grad=False)
        reply, outs, _ = self.run_candidate(inputs, refs, train=True, grad=False, skip_triton=True)
        if reply.get("ok") and compare.compare_outputs(outs, refs, opts.tolerance).ok:
            self.res.verdict, self.res.correct = T.NO_TRITON, False
            self.res.flags.append(T.TRITON_UNUSED)
            self.res.error = ("the outputs stay correct when every Triton launch is skipped, so the Triton kernels "
                              "do not compute the result; move the computation into the kernels")
            return False
        return True

    # ---- timing ------------------------------------------------------------------------------------
    def time_references(self) -> None:
        """The references' times (eager, torch.compile, the protocol's own cost), before the candidate process
        has any code: a candidate alive while its reference is timed could slow that reference from a thread
        of its own that keeps the GPU busy between its calls (attack q01), an inflated speedup that the cache
        would also hand every later candidate of the task. Timed in an exclusive hold of the GPU, like the
        candidate; torch.compile's compilation (host work) before it, under the shared hold."""
        t0 = time.monotonic()
        self._refs = self._cached_reference_times()
        if self._refs is None:  # an exclusive hold (every other worker's GPU work stopped) only for what is missing
            self._compile_reference()
            with self.j.on_gpu(self.deadline, measure=True):
                self._refs = self._reference_times()
        self.res.phase_seconds["reference_timing"] = time.monotonic() - t0

    def _wanted_reference_times(self) -> dict[str, float | None]:
        """Each reference time this evaluation needs (torch.compile's only with `compile_baseline`) -> its
        cached ms, None while not cached."""
        return {mode: self.j.ref_times.get(self._reference_key(mode)) for mode in ("eager", "compile", "protocol")
                if mode != "compile" or self.opts.compile_baseline}

    def _cached_reference_times(self) -> tuple[float | None, float | None, float | None] | None:
        """`_reference_times`' answer when every time it needs is cached (every later candidate of a task),
        else None."""
        got = self._wanted_reference_times()
        return None if None in got.values() else (got.get("eager"), got.get("compile"), got.get("protocol"))

    def measure(self, *, timing: bool, profile: bool) -> None:
        """The candidate's profile and timing, in one exclusive hold of the GPU (`Judge.on_gpu`): while it
        lasts no other drk work runs there, so it covers device work only. Reading the profilers' activity
        (host work) comes after it. The profiled forward goes first: the candidate process stops each op's
        profiler after its reply, and the time op's (thousands of calls' activity) is the costly one, so
        it stops after the hold is let go, not inside it before a next op. The references were timed
        before the candidate loaded (`time_references`)."""
        res = self.res
        with self.j.on_gpu(self.deadline, measure=True):
            t0 = time.monotonic()  # the wait for the hold is `gpu_lock_wait_measure`, not the profile's
            profiled = self._profile_op() if profile else False
            t_time = time.monotonic()
            timed = self._timed() if timing else None
            if timing and timed is None:
                return
        t_timing, t_prof = time.monotonic() - t_time, t_time - t0
        if timed is not None:
            t1 = time.monotonic()
            self._finish_timing(*timed)
            res.phase_seconds["timing"] = t_timing + time.monotonic() - t1
        if profiled and res.verdict == T.OK:
            t1 = time.monotonic()
            self._coverage()
            res.phase_seconds["profile"] = t_prof + time.monotonic() - t1

    def _timed(self) -> tuple | None:
        """Inside the exclusive hold: the candidate's time op (again when the speedup is implausible) and
        the references' times. None (and a failing verdict) when the time op failed."""
        res, opts = self.res, self.opts
        hdr = {"op": "time", "keys": ["timing"], "warmup": opts.warmup, "trials": opts.timing_trials,
               "l2_flush": opts.l2_flush, "host_ahead": opts.host_ahead, "train": True}
        self._settle()
        cand, _ = self.j.call(hdr, deadline=self.deadline)
        if not cand.get("ok"):
            self._fail(cand)
            res.correct = False
            return None
        runtime, stats, flags = self._runtime_from(cand)
        last = cand  # the time op whose device activity the judge reads (the runner keeps the last one's)
        if self._refs is None:  # never timed now, beside candidate code (`time_references`)
            raise RuntimeError("the references were not timed before the candidate loaded")
        eager, compiled, protocol_ms = self._refs
        runtime, more = judge_clock_bound(runtime, calls=int(cand.get("calls") or 0) + warmup_calls(cand, opts.warmup),
                                          wall_ms=float(cand.get("judge_wall_s") or 0.0) * 1000.0,
                                          protocol_ms=protocol_ms)
        flags += more
        if eager and runtime and eager / runtime > opts.max_plausible_speedup:
            self._settle()
            again, _ = self.j.call(hdr, deadline=self.deadline)  # re-measure before believing it
            if again.get("ok"):
                last = again
                runtime2, stats2, flags2 = self._runtime_from(again)
                if runtime2 > runtime:
                    runtime, stats = runtime2, stats2
                flags += [f for f in flags2 if f not in flags]
            if eager / runtime > opts.max_plausible_speedup:
                flags.append(T.EXCESSIVE_SPEEDUP)
        return last, runtime, stats, flags, eager, compiled

    def _finish_timing(self, last: dict, runtime: float, stats: dict, flags: list, eager, compiled) -> None:
        """After the exclusive hold: the timed calls' device activity (for `timed_work_problem`) and the
        result's timing fields."""
        res, opts = self.res, self.opts
        rows = self._rows("time")
        if rows is None:
            return
        self.timed_work = kernel_work(rows, self.kernel_names, last.get("launch_counts"))
        self.timed_calls = int(last.get("calls") or 0) + warmup_calls(last, opts.warmup)
        res.flags += [f for f in flags if f not in res.flags]
        res.ref_eager_ms, res.ref_compile_ms = eager, compiled
        res.runtime_ms, res.runtime_stats = runtime, stats
        res.protocol["gpu_clocks"] = harness.gpu_clocks()
        gate = last.get("gate")
        if isinstance(gate, dict):  # the candidate process's account of its gates: for the reader, decides nothing
            res.protocol["timing_gate"] = {k: gate[k] for k in ("chunks", "missed", "held_ms", "off", "b2b_kept")
                                           if isinstance(gate.get(k), (int, float, bool))}
        res.speedup = eager / runtime if eager and runtime else None
        res.speedup_compile = compiled / runtime if compiled and runtime else None

    def _settle(self) -> None:
        """With an ambient profiler (DRK_PROFILER=ambient) the candidate process stops it before the time
        op, outside the judge's clock around that op (its cost grows with the ops it recorded)."""
        if getattr(self.j, "profiler", "per-op") == "ambient":
            self.j.call({"op": "settle"}, deadline=self.deadline)

    @staticmethod
    def _runtime_from(reply: dict) -> tuple[float, dict, list[str]]:
        runtime, stats, escaped = harness.runtime_of(reply)
        return runtime, stats, [T.SIDE_STREAM] if escaped else []

    def _reference_key(self, mode: str) -> str:
        opts, task, j = self.opts, self.task, self.j
        sig = (self.res.task_hash, repr(sorted(task.constants.items())), self.res.shapes.get("inputs"),
               j.versions.get("gpu"), j.versions.get("torch"), opts.warmup, opts.timing_trials, opts.l2_flush,
               harness.TIMING_PROTOCOL) + (("host_ahead",) if opts.host_ahead else ())
        return repr(sig + (mode,))

    def _reference_inputs(self) -> list:
        """The timing inputs made again from their seed (the judge keeps no private copy), once."""
        if self._ref_inputs is None:
            self._ref_inputs = harness.make_inputs(self.task.module, self.timing_seed, self.device)
        return self._ref_inputs

    def _compile_reference(self) -> None:
        """torch.compile compiles on the first call: seconds of host work, which under the exclusive hold
        would stop every other worker's GPU work. So when the compiled reference's time is not cached yet,
        it is compiled and called once here, under the shared hold, and timed later like the eager one."""
        if not self.opts.compile_baseline or self.j.ref_times.get(self._reference_key("compile")) is not None:
            return
        model = self.task.model
        try:
            with self.j.on_gpu(self.deadline):
                fn = torch.compile(model)
                model.train(True)
                with torch.no_grad():
                    fn(*self._reference_inputs())
                harness.sync(self.device)
        except Exception as e:  # torch.compile can fail on exotic references; the eager baseline still stands
            self._compiled = False
            self._note_reference("compile", error=f"torch.compile: {type(e).__name__}: {e}")
            return
        finally:
            self._ref_inputs = None  # not held beside the candidate's timed calls: made again from the seed
        self._compiled = fn

    def _reference_times(self) -> tuple[float | None, float | None, float | None]:
        """(eager ms, torch.compile ms, the protocol's own wall ms per call), each cached: the last is the
        judge's wall time per call of the timing protocol around an empty call on these inputs (in-place
        rescaling, L2 flush, events, syncs), which `judge_clock_bound` takes off the candidate's. A reference
        time whose gated pass never held (`harness.gate_held`) is used but not cached: every later candidate
        of the task would be measured against the host's launch latency instead of the reference's work."""
        j = self.j
        got = self._wanted_reference_times()
        for mode, cached in got.items():
            if cached is not None:
                continue
            inputs = self._reference_inputs()
            held = True
            if mode == "protocol":
                ms = self._time_protocol(inputs)
            else:
                ms, held = self._time_reference(inputs, mode)
            if ms is not None and held:
                j.ref_times.put(self._reference_key(mode), ms,
                                {"task": self.res.task, "mode": mode, "gpu": j.versions.get("gpu")})
            got[mode] = ms
        self._ref_inputs = None  # free before the next step allocates
        return got.get("eager"), got.get("compile"), got.get("protocol")

    def _time_protocol(self, inputs: list) -> float:
        """Wall ms per call of the timing protocol around a call that does nothing, as the judge's clock
        sees a candidate's timing op: under the device profiler the candidate process starts before the op
        (its start inside the clock, its stop after the reply)."""
        opts = self.opts
        t0 = time.monotonic()
        prof = harness.profiler_factory()()
        try:
            ms = harness.time_calls(lambda i: None, self.device, warmup=opts.warmup, trials=opts.timing_trials,
                                    l2_flush=opts.l2_flush, perturb=harness.floating_tensors(inputs),
                                    host_ahead=opts.host_ahead)
            wall_ms = (time.monotonic() - t0) * 1000.0
        finally:
            prof.stop()
        return wall_ms / (int(ms["calls"]) + warmup_calls(ms, opts.warmup))

    def _time_reference(self, inputs: list, mode: str) -> tuple[float | None, bool]:
        """(the reference's runtime in `mode` (eager | compile), whether its gated pass held), timed without a
        profiler, as do_bench times it: a profiler adds host work to every launch, which a host-bound
        reference (a torch.compile'd short kernel) pays in full (docs/measurements/timing-fidelity.md).

        With `host_ahead`, a pass whose gates did not hold (the judge's host stalled, not the reference's
        fault: the reference is trusted code) is timed again, up to REFERENCE_TIMING_TRIES passes; when none
        held, the fastest pass's median stands (a host-bound pass is only ever slower) and the result says
        so. Why a compiled reference has no time is recorded too, never dropped silently."""
        model = self.task.model
        fn = model
        if mode == "compile":
            if self._compiled is False:  # failed to compile (`_compile_reference`)
                return None, True
            try:
                fn = self._compiled if self._compiled is not None else torch.compile(model)
            except Exception as e:
                self._note_reference(mode, error=f"torch.compile: {type(e).__name__}: {e}")
                return None, True
        model.train(True)
        passes = []
        try:
            for _ in range(REFERENCE_TIMING_TRIES if self.opts.host_ahead else 1):
                with torch.no_grad():
                    ms = harness.time_calls(lambda i: fn(*inputs), self.device, warmup=self.opts.warmup,
                                            trials=self.opts.timing_trials, l2_flush=self.opts.l2_flush,
                                            perturb=harness.floating_tensors(inputs), host_ahead=self.opts.host_ahead)
                passes.append(ms)
                if harness.gate_held(ms):
                    break
        except Exception as e:  # torch.compile can fail on exotic references; the eager baseline still stands
            if mode == "eager":
                raise
            self._note_reference(mode, error=f"{type(e).__name__}: {e}")
            return None, True
        held = harness.gate_held(passes[-1])
        runtime = min(harness.runtime_of(ms)[0] for ms in passes)
        gate = passes[-1].get("gate")
        if isinstance(gate, dict):
            self._note_reference(mode, passes=len(passes), held=held,
                                 **{k: gate[k] for k in ("chunks", "missed", "off", "b2b_kept", "b2b_all")})
        return runtime, held

    def _note_reference(self, mode: str, **facts) -> None:
        """What the reader of a result needs to trust a reference time measured for it (cached ones were
        measured with a gate that held)."""
        self.res.protocol.setdefault("reference_timing", {})[mode] = {
            k: (v[:400] if isinstance(v, str) else v) for k, v in facts.items()}

    # ---- caching probe -----------------------------------------------------------------------------
    def caching(self) -> None:
        """Change the timing inputs' values in place (same tensors, same pointers) and call again: a
        candidate that caches outputs by pointer, shape or a sample of the content returns stale values."""
        t0 = time.monotonic()
        with self.j.on_gpu(self.deadline):
            self._caching()
        self.res.phase_seconds["caching"] = time.monotonic() - t0

    def _caching(self) -> None:
        if "timing" not in self.kept:
            return
        task, opts = self.task, self.opts
        seed = self.input_seed + CACHE_PROBE_SEED
        refs, fresh = self.reference(harness.make_inputs(task.module, seed, self.device), seed, train=True,
                                        grad=False)
        reply, outs, _ = self.run_candidate(fresh, refs, train=True, grad=False, key="timing", refresh=fresh)
        if not reply.get("ok"):
            self._fail(reply)
            self.res.correct = False
            return
        cmp = compare.compare_outputs(outs, refs, opts.tolerance)
        moved = self._moved_by_a_swap(fresh, refs, seed) if cmp.ok else None
        if moved is not None:
            # the same inputs again with a value changed at a random position: a cache keyed on a sample of the
            # content (which the change above always misses) hits here and returns the last output
            refs, swapped = moved
            reply, outs, _ = self.run_candidate(swapped, refs, train=True, grad=False, key="timing",
                                                refresh=swapped)
            if not reply.get("ok"):
                self._fail(reply)
                self.res.correct = False
                return
            cmp = compare.compare_outputs(outs, refs, opts.tolerance)
        if not cmp.ok:
            self.res.verdict, self.res.correct = T.HACKED, False
            self.res.flags.append(T.OUTPUT_CACHED)
            self.res.error = ("after the inputs' values changed in place, the forward returned stale outputs "
                              f"({cmp.message}); outputs must be recomputed on every call")

    def _moved_by_a_swap(self, fresh: list, refs: list, seed: int) -> tuple[list, list] | None:
        """`fresh` with values changed at single positions (`swap_few_values`, one more draw at a time) until
        the reference's outputs on them differ from `refs` by SWAP_MOVE times the tolerance: (those outputs,
        the inputs), or None when no draw moved them (a value copied onto an equal one, a saturated region,
        an output that does not depend on the values)."""
        for k in range(SWAP_TRIES):
            if not swap_few_values(fresh, seed + k):  # a value copied onto an equal one: nothing to compute
                continue
            moved, swapped = self.reference(fresh, seed, train=True, grad=False)
            if swapped is not fresh:  # the reference wrote its inputs: they were made again, changed the same way
                for j in range(k + 1):
                    swap_few_values(swapped, seed + j)
            if not compare.compare_outputs(moved, refs, self.opts.tolerance * SWAP_MOVE).ok:
                return moved, swapped
            fresh = swapped
        return None

    # ---- coverage ----------------------------------------------------------------------------------
    def _rows(self, of: str) -> list[dict] | None:
        """The device activity of the last `of` op (time or profile), from the profiler the candidate
        process started around it; None (and a failing verdict) if candidate code stopped that profiler."""
        reply, _ = self.j.call({"op": "rows", "of": of}, deadline=self.deadline)
        if not reply.get("ok"):
            self._fail(reply)
            self.res.correct = False
            return None
        return reply.get("rows") or []

    def _profile_op(self) -> bool:
        """Inside the exclusive hold (kernel durations, like times, are the GPU's alone): one forward on
        the timing inputs under the op's own profiler, read later by `_coverage`."""
        reply, _ = self.j.call({"op": "profile", "key": "timing", "train": True}, deadline=self.deadline)
        self._profile_launches = reply.get("launch_counts")
        return bool(reply.get("ok"))

    def _coverage(self) -> None:
        """After the hold: the profiled forward's device activity gives the coverage (the source's own Triton
        kernels' share of its device time) and the check that each timed call ran that work."""
        rows, triton = self._rows("profile"), self.kernel_names
        if rows is None:
            return
        total = sum(float(r.get("ms", 0.0)) for r in rows)
        ours = kernel_work(rows, triton, self._profile_launches)
        self.res.coverage = ours[0] / total if total > 0 else None
        self.res.kernels = [{"name": str(r.get("name"))[:120], "ms": round(float(r.get("ms", 0.0)), 4),
                             "calls": int(r.get("calls", 1)),
                             "share": round(float(r.get("ms", 0.0)) / total, 4) if total else None,
                             "triton": r.get("name") in triton} for r in rows[:10]]
        tf32 = tf32_matmul(rows, triton, self._profile_launches)
        if tf32 is not None:
            # the settings are compared after each call, so only a change made and undone inside the forward
            # (attack m12) reaches here: its torch matmuls ran at a precision the reference never had
            self.res.verdict, self.res.correct = T.FORBIDDEN, False
            self.res.error = (f"a float32 matmul in the forward ran on TF32 tensor cores (kernel {tf32[:120]}): "
                              "the numeric settings were changed inside the forward; torch's matmuls must run "
                              "at the pinned float32 precision (only your Triton kernels choose their own)")
            return
        problem = timed_work_problem(ours, self.timed_work, self.timed_calls)
        if problem:
            self.res.verdict, self.res.correct = T.HACKED, False
            self.res.flags.append(T.TIMED_WORK_SKIPPED)
            self.res.error = problem

    def cpu_coverage(self) -> None:
        """Interpreter time inside the source's own @triton.jit kernels over the forward's wall time."""
        if self.cpu_wall_s <= 0:
            return
        self.cpu_launch_s = sum(s for name, s in self.cpu_rows.items() if name in self.kernel_names)
        if self.cpu_ref_ms and self.cpu_cand_ms:  # CPU figures, by the judge's clock: not GPU speedups
            self.res.cpu_times = {"reference_ms": round(statistics.median(self.cpu_ref_ms), 3),
                                  "candidate_ms": round(statistics.median(self.cpu_cand_ms), 3)}
        # Interpreter time is mostly per-op overhead, so a one-program kernel beside torch code looks busy:
        # coverage is also capped by the share of the output Triton itself wrote.
        written = statistics.median(self.cpu_written) if self.cpu_written else 1.0
        self.res.coverage = min(1.0, self.cpu_launch_s / self.cpu_wall_s, written)
        total, n = self.cpu_wall_s, max(1, self.cpu_forwards)
        self.res.kernels = [{"name": str(name)[:120], "ms": round(s * 1000 / n, 3), "share": round(s / total, 4),
                             "triton": name in self.kernel_names}
                            for name, s in sorted(self.cpu_rows.items(), key=lambda kv: -kv[1])[:10]]

