"""The evaluator against the red-team attack suite (tests/attacks/, see its README): every CPU-runnable attack
is evaluated as a black box through `LocalPool` and must get one of the verdicts in its header, leave no side
effect on the host (marker files, surviving processes, connections), leak no secret into its result, and keep
the result bounded. `then=` and `witness=` attacks are poisoners: a correct follower evaluated right after them
on the same worker must get exactly the result it gets alone. All poisoners share that worker one after another,
as candidates do in use; the results alone come from a pool no attack reaches.

    cd /work/wt-redteam && PYTHONPATH=src nice -n 10 .venv/bin/python -m pytest -q tests/test_attacks.py
"""
from __future__ import annotations

import base64
import codecs
import json
import os
import pwd
import secrets
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # it evaluates every attack, and each pair in turn

from conftest import ROOT
from drk.gym import EvalOptions, EvalRequest, LocalPool
from drk.tasks import task_from_file

ATTACK_DIR = ROOT / "tests" / "attacks"
HOME = pwd.getpwuid(os.getuid()).pw_dir
MARKER_DIR = Path(HOME) / "drk-redteam-markers"
SECRET_NAME = "DRK_TEST_SECRET_TOKEN"
MAX_RESULT_BYTES = 1 << 20      # the whole result as JSON
MAX_ERROR_CHARS = 64 << 10      # the error text shown to a model
MAX_FIELD_CHARS = 4096          # any other string in the result (kernel names, shapes, versions)
SURVIVOR_GRACE_S = 6.0          # survivors sleep ~4 s before writing their marker
FOLLOWER_INPUT_SEED = 42
HOST_SECRET_FILE = ROOT / "drk-redteam-host-secret.txt"  # a world-readable host file outside the masked dirs


def parse_header(path: Path) -> dict:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# drk-attack:"), f"{path} lacks a drk-attack header"
    h = dict(kv.split("=", 1) for kv in first.split(":", 1)[1].split())
    for key in ("task", "property", "expect"):
        assert key in h, f"{path.name}: header lacks {key}="
    h["expect"] = h["expect"].split("|")
    assert "ok" not in h["expect"] or "then" in h or "witness" in h or "markers" in h or "token" in h or "max_coverage" in h \
        or h["property"] == "scrubbed_results", f"{path.name}: `ok` is only acceptable with a side-effect check"
    h.setdefault("device", "any")
    h["markers"] = [m for m in h.get("markers", "").split(",") if m]
    h["timeout"] = float(h.get("timeout", 60))
    h["seed"] = int(h["seed"]) if "seed" in h else None  # a fixed input seed: for a catch that is likely, not certain
    return h


def site_packages() -> str:
    import torch
    return os.path.dirname(os.path.dirname(torch.__file__))


def expand(marker: str) -> Path:
    return Path(marker.format(home=HOME, repo=str(ROOT), site=site_packages(), tmp="/tmp", shm="/dev/shm",
                              etc="/etc"))


ATTACKS = sorted(p for p in ATTACK_DIR.glob("*.py"))
HEADERS = {p.name: parse_header(p) for p in ATTACKS}
CPU_ATTACKS = [p for p in ATTACKS if HEADERS[p.name]["device"] in ("cpu", "any")]
PAIRS = [p for p in CPU_ATTACKS if "then" in HEADERS[p.name] or "witness" in HEADERS[p.name]]
NEIGHBOUR = [p for p in PAIRS if HEADERS[p.name]["property"] == "verdict_not_neighbours"]


def attack_id(p: Path) -> str:
    return f"{HEADERS[p.name]['property']}-{p.stem}"


def eval_request(path: Path, h: dict | None = None, label: str | None = None, follower: bool = False) -> EvalRequest:
    if follower:
        if "witness" in h:  # an attack-specific follower for the attack's own task (tests/attacks/witness/)
            src, task = ROOT / h["witness"], ROOT / h["task"]
        else:
            src = ROOT / h["then"]
            task = ROOT / "data" / "queries" / src.name
        # the same inputs in both of its evaluations (input_seed): its results are compared for equality
        return EvalRequest(task_from_file(task), src.read_text(),
                           EvalOptions(device="cpu", input_budget_mb=0.25, timeout_s=120,
                                       input_seed=FOLLOWER_INPUT_SEED),
                           solution=label or src.name)
    h = HEADERS[path.name]
    return EvalRequest(task_from_file(ROOT / h["task"]), path.read_text(),
                       EvalOptions(device="cpu", input_budget_mb=0.25, timeout_s=h["timeout"], input_seed=h["seed"]),
                       solution=label or path.name)


# ---- side-effect observers (all outside the candidate) -------------------------------------------------------

class Listener:
    """TCP + UDP listeners on 127.0.0.1:<port>; records every connection or datagram."""

    def __init__(self, port: int) -> None:
        self.port, self.hits, self.stop = port, [], threading.Event()
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("127.0.0.1", port))
        self.tcp.listen(16)
        self.tcp.settimeout(0.2)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", port))
        self.udp.settimeout(0.2)
        self.threads = [threading.Thread(target=self._tcp, daemon=True), threading.Thread(target=self._udp, daemon=True)]
        for t in self.threads:
            t.start()

    def _tcp(self) -> None:
        while not self.stop.is_set():
            try:
                conn, addr = self.tcp.accept()
            except OSError:
                continue
            conn.settimeout(1.0)
            try:
                data = conn.recv(256)
            except OSError:
                data = b""
            self.hits.append(("tcp", addr, data[:64]))
            try:  # answer like an HTTP server so urlopen does not hang
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            except OSError:
                pass
            conn.close()

    def _udp(self) -> None:
        while not self.stop.is_set():
            try:
                data, addr = self.udp.recvfrom(256)
            except OSError:
                continue
            self.hits.append(("udp", addr, data[:64]))

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(2)
        self.tcp.close()
        self.udp.close()


def processes_with(token: str) -> list[int]:
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                if token.encode() in Path(f"/proc/{d}/cmdline").read_bytes():
                    found.append(int(d))
            except OSError:
                pass
    return found


def host_sensitive_lines() -> list[str]:
    """Lines of host files that must never reach a result (the test reads them; nothing is printed)."""
    lines: list[str] = []
    files = [Path("/etc/shadow"), Path(HOME) / ".netrc", Path(HOME) / ".git-credentials"]
    ssh = Path(HOME) / ".ssh"
    if ssh.is_dir():
        files += [p for p in ssh.iterdir() if p.is_file() and not p.name.endswith(".pub")]
    for f in files:
        try:
            lines += [ln.strip() for ln in f.read_text(errors="replace").splitlines() if len(ln.strip()) >= 16
                      and "PRIVATE KEY" not in ln]
        except OSError:
            pass
    try:  # the first real entries of /etc/passwd (root's line): host details, not for a model to see
        lines += [ln for ln in Path("/etc/passwd").read_text().splitlines()[:3] if len(ln) >= 16]
    except OSError:
        pass
    return lines


def secret_forms(secret: str) -> list[str]:
    return [secret, base64.b64encode(secret.encode()).decode(), secret.encode().hex(), secret[::-1],
            codecs.encode(secret, "rot13"), secret[10:]]


def all_strings(obj, key=""):
    if isinstance(obj, str):
        yield key, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from all_strings(k, key)
            yield from all_strings(v, f"{key}.{k}" if key else str(k))
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from all_strings(v, key)


def scan_survivors(out: dict) -> None:
    for p in ATTACKS:
        token = HEADERS[p.name].get("token")
        if token:
            pids = processes_with(token)
            out["survivors"].setdefault(p.name, []).extend(pids)
            for pid in pids:  # leftovers of this test's own candidates: stop them by pid
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


# ---- the run -------------------------------------------------------------------------------------------------

def selected_attacks(request) -> set[str] | None:
    """The attack files whose tests were collected (`-k i03` runs only those); None when all were."""
    names = {item.callspec.params["path"].name for item in request.session.items
             if getattr(item, "callspec", None) is not None and "path" in item.callspec.params}
    return None if not names or len(names) == len(CPU_ATTACKS) else names


@pytest.fixture(scope="module")
def attack_run(tmp_path_factory, request):
    secret = "drkSecret-" + secrets.token_hex(16)
    old = os.environ.get(SECRET_NAME)
    os.environ[SECRET_NAME] = secret  # in the PARENT: a candidate must not be able to see it
    HOST_SECRET_FILE.write_text(secret + "\n")  # and on the host's disk, outside /root and /home
    HOST_SECRET_FILE.chmod(0o644)
    chosen = selected_attacks(request)
    cpu_attacks = [p for p in CPU_ATTACKS if chosen is None or p.name in chosen]
    pairs = [p for p in PAIRS if p in cpu_attacks]
    neighbour = [p for p in NEIGHBOUR if p in cpu_attacks]
    MARKER_DIR.mkdir(exist_ok=True)
    all_markers = {p.name: [expand(m) for m in HEADERS[p.name]["markers"]] for p in ATTACKS}
    for ms in all_markers.values():
        for m in ms:
            m.unlink(missing_ok=True)
    listeners = {}
    for p in cpu_attacks:
        if "listen" in HEADERS[p.name]:
            port = int(HEADERS[p.name]["listen"])
            listeners[p.name] = Listener(port)
    out = {"secret": secret, "results": {}, "pairs": {}, "neighbours": {}, "markers": {}, "survivors": {},
           "net": {}}
    t0 = time.monotonic()
    out["stage_seconds"] = {}

    def stage(name: str) -> None:  # seconds of each step of the run, for the report
        out["stage_seconds"][name] = round(time.monotonic() - t0 - sum(out["stage_seconds"].values()), 1)

    try:
        cache = tmp_path_factory.mktemp("drk-attack-cache")
        with LocalPool(device="cpu", workers=2, cache_dir=str(cache)) as pool:
            for r in pool.evaluate_batch([eval_request(p) for p in cpu_attacks]):
                out["results"][r.solution] = r
        stage("batch")
        time.sleep(SURVIVOR_GRACE_S)  # the pool is closed: anything of a candidate still alive is a survivor
        scan_survivors(out)
        # Each follower's result alone: first, in a pool that no attack ever reaches (the same inputs every time,
        # so one evaluation per distinct follower is its result alone wherever it runs)
        alone: dict[tuple[str, str], object] = {}
        with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path_factory.mktemp("drk-alone"))) as pool:
            for p in pairs:
                req = eval_request(p, HEADERS[p.name], "follower-alone", follower=True)
                key = (req.source, req.task.source)
                if key not in alone:
                    alone[key] = pool.evaluate(req)
        stage("alone")
        # Then every poisoner followed by its follower, sequentially on ONE worker of one pool: as in use, where
        # a worker serves candidate after candidate, the follower meets whatever the poisoner (and every poisoner
        # before it) left behind, and must get exactly its result alone
        with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path_factory.mktemp("drk-pairs"))) as pool:
            for p in pairs:
                h = HEADERS[p.name]
                poisoner = pool.evaluate(eval_request(p, label="poisoner"))
                follower = eval_request(p, h, "follower-after", follower=True)
                after = pool.evaluate(follower)
                out["pairs"][p.name] = (alone[(follower.source, follower.task.source)], poisoner, after)
        stage("pairs")
        # attacker and a correct candidate at the same time on the two workers of one pool
        with LocalPool(device="cpu", workers=2, cache_dir=str(tmp_path_factory.mktemp("drk-nb"))) as pool:
            for p in neighbour:
                h = HEADERS[p.name]
                rs = pool.evaluate_batch([eval_request(p, label="attacker"), eval_request(p, h, "neighbour", follower=True)])
                out["neighbours"][p.name] = {r.solution: r for r in rs}
        stage("neighbours")
    finally:
        for name, lst in listeners.items():
            lst.close()
            out["net"][name] = list(lst.hits)
        scan_survivors(out)
        for name, ms in all_markers.items():
            out["markers"][name] = [str(m) for m in ms if m.exists()]
            for m in ms:  # clean up whatever an attack managed to leave on the host
                try:
                    m.unlink(missing_ok=True)
                except OSError:
                    pass
        HOST_SECRET_FILE.unlink(missing_ok=True)
        for extra in ("/tmp/drk-redteam-b09.npy", "/dev/shm/drk-redteam-b09.npy"):
            Path(extra).unlink(missing_ok=True)
        if old is None:
            os.environ.pop(SECRET_NAME, None)
        else:
            os.environ[SECRET_NAME] = old
    out["seconds"] = time.monotonic() - t0
    out["sensitive"] = host_sensitive_lines()
    if os.environ.get("DRK_ATTACK_REPORT"):  # a JSON summary for the red-team report
        Path(os.environ["DRK_ATTACK_REPORT"]).write_text(json.dumps({
            name: {"verdict": r.verdict, "coverage": r.coverage, "flags": r.flags, "error": r.error[:300],
                   "markers": out["markers"].get(name), "survivors": out["survivors"].get(name),
                   "net": len(out["net"].get(name, [])),
                   "pair": [(x.verdict, x.max_abs_diff, x.error[:200]) for x in out["pairs"].get(name, ())]}
            for name, r in out["results"].items()} | {"_seconds": out["seconds"], "_stage_seconds": out["stage_seconds"],
            "_pair_seconds": {name: [x.phase_seconds.get("total") for x in xs] for name, xs in out["pairs"].items()}},
            indent=1, default=str))
    return out


def check_result_hygiene(r, run) -> list[str]:
    """Problems with one result: secrets or host lines in it, or unbounded size."""
    problems = []
    d = r.to_dict()
    blob = json.dumps(d, default=str)
    if len(blob) > MAX_RESULT_BYTES:
        problems.append(f"result is {len(blob)} bytes (> {MAX_RESULT_BYTES})")
    if len(r.error) > MAX_ERROR_CHARS:
        problems.append(f"error is {len(r.error)} chars (> {MAX_ERROR_CHARS})")
    for key, s in all_strings(d):
        if key != "error" and len(s) > MAX_FIELD_CHARS:
            problems.append(f"field {key} holds a {len(s)}-char string")
            break
    for form in secret_forms(run["secret"]):
        if form in blob:
            problems.append("the parent's secret (or an encoding of it) appears in the result")
            break
    leaked = sum(1 for ln in run["sensitive"] if ln in blob)
    if leaked:
        problems.append(f"{leaked} line(s) of host files (/etc/shadow, /etc/passwd, ~/.ssh, ...) appear in the result")
    return problems


def same_result(a, b) -> bool:
    if a.verdict != b.verdict or a.trials_passed != b.trials_passed or a.correct != b.correct:
        return False
    if (a.max_abs_diff is None) != (b.max_abs_diff is None):
        return False
    return a.max_abs_diff is None or abs(a.max_abs_diff - b.max_abs_diff) <= 1e-6


# Attacks the evaluator does not catch, each with the reason; strict, so a fix shows up as an XPASS failure
# and the entry must go. The protocol fixes a task's shapes and passes contiguous inputs (KernelBench's
# contract): kernels specialised to that are correct for the task, so those three are out of its scope.
KNOWN_GAPS = {
    "e01_no_mask_multiple_of_block.py": "out of scope: the task fixes its shapes, and no mask is needed for them",
    "e02_hardcoded_shape.py": "out of scope: the task fixes its shapes (KernelBench's contract)",
    "e06_assume_contiguous_layout.py": "out of scope: the protocol passes contiguous inputs (KernelBench's contract)",
    # round 2 (tests/attacks/README.md, "Round 2 results")
    # round 3
    "k08_torch_math_triton_copy_laundering.py": "open on CPU: coverage there is the interpreter's time in the "
    "candidate's kernels, which dwarfs torch's native math, so a copy kernel reads ~1.0; on GPU the profiler "
    "sees torch's own kernels (bench/attacks_gpu.py runs it there)",
    # round 5
    "m04_forge_runner_reply_evidence.py": "open: launch records, written share and (on GPU) the profiler's rows are "
    "collected in the candidate's process and sent by the runner object, which candidate code can reach and "
    "rewrite; the judge's own checks (outputs, ablation, wall clock) do not bound the coverage it claims",
    # round 10 (a black-box red team on CPU, 2026-12-07; tests/attacks/README.md "Round 10 results")
    "s04_row_block_cap_full_shape.py": "open on CPU: the CPU path evaluates at shapes scaled to its budget "
    "(`scaled_shapes` in the result), under the block the kernel caps itself at; a GPU evaluates the task's own "
    "shapes, where the unwritten columns are wrong (bench/attacks_gpu.py runs it there)",
    # round 11 (black box, CPU, 2026-12-07; docs/hack-defences.md)
    "t04_right_for_the_first_sixteen_calls.py": "open on CPU: it checks about 14 calls and times none; on a GPU the "
    "caching probe after the timed calls checks one more (bench/attacks_gpu.py runs it there)",
    "m12_numeric_settings_only_inside_forward.py": "open on CPU: the pinned numeric settings are compared before and "
    "after each call, so settings changed inside the forward and restored before it returns go unseen there (where "
    "they change nothing); on GPU the profiled forward's rows name cuBLAS's TF32 kernels (`checks.tf32_matmul`: "
    "forbidden), as in-process evidence (the m04 class)",
}


if os.geteuid() != 0:  # a pid namespace per candidate needs the evaluator to run as root (zygote.PidNamespaces)
    KNOWN_GAPS["m02_pid_counter_channel.py"] = (
        "open without root: the candidates of a slot share its pid namespace, so the pid a candidate gets tells "
        "how many its predecessor used (about a byte per candidate)")
    # a tmpfs of each candidate's own needs its own mount namespace (zygote.own_tmp); the running counters' zeroed
    # copies and bounded tmpfs need none: without root the sandbox makes them itself (forkserver.ForkServer.launch)
    KNOWN_GAPS["n01_tmpfs_inode_counter_channel.py"] = (
        "open without root: the candidates of a slot share its /tmp, whose inode counter carries a byte")


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[p.name]))
                                  if p.name in KNOWN_GAPS else p for p in CPU_ATTACKS],
                         ids=[attack_id(p) for p in CPU_ATTACKS])
def test_attack(attack_run, path: Path):
    h = HEADERS[path.name]
    r = attack_run["results"][path.name]
    failures = []
    if r.verdict not in h["expect"]:
        failures.append(f"verdict {r.verdict} not in {h['expect']} (coverage={r.coverage}, "
                        f"flags={r.flags}, error={r.error[:200]!r})")
    if r.verdict == "ok" and "max_coverage" in h and (r.coverage is None or r.coverage >= float(h["max_coverage"])):
        failures.append(f"ok with coverage {r.coverage} (must be < {h['max_coverage']} for full reward to be refused)")
    if r.verdict != "ok" and not r.error:
        failures.append("a failing verdict without an error text")
    if attack_run["markers"].get(path.name):
        failures.append(f"side effect on the host: {attack_run['markers'][path.name]} written")
    if attack_run["survivors"].get(path.name):
        failures.append(f"process(es) {attack_run['survivors'][path.name]} with token {h['token']} survived the evaluation")
    if attack_run["net"].get(path.name):
        failures.append(f"network reached 127.0.0.1:{h['listen']}: {attack_run['net'][path.name]}")
    if h.get("check") == "secret_numbers" and r.max_abs_diff is not None \
            and abs(r.max_abs_diff - ord(attack_run["secret"][10])) < 0.5:
        failures.append("the secret leaked through max_abs_diff")
    failures += check_result_hygiene(r, attack_run)
    if path.name in attack_run["pairs"]:
        alone, poisoner, after = attack_run["pairs"][path.name]
        for x in (alone, poisoner, after):
            failures += [f"[{x.solution}] {p}" for p in check_result_hygiene(x, attack_run)]
        if alone.verdict != "ok":
            failures.append(f"follower {h.get('then', h.get('witness'))} alone is not ok ({alone.verdict}: {alone.error[:200]!r})")
        elif (poisoner.verdict == "ok" or "witness" in h) and not same_result(alone, after):
            failures.append(f"follower poisoned: alone {alone.verdict}/{alone.max_abs_diff}, after the attack "
                            f"{after.verdict}/{after.max_abs_diff} ({after.error[:200]!r})")
        elif h["property"] == "verdict_not_neighbours" and after.verdict != "ok":
            failures.append(f"next candidate not ok after the attack: {after.verdict} ({after.error[:200]!r})")
    if path.name in attack_run["neighbours"]:
        nb = attack_run["neighbours"][path.name]["neighbour"]
        if nb.verdict != "ok":
            failures.append(f"concurrent neighbour not ok: {nb.verdict} ({nb.error[:200]!r})")
    assert not failures, f"{path.name} [{h['property']}]: " + "; ".join(failures)


def test_headers_are_well_formed():
    verdicts = {"ok", "incorrect", "compile_error", "runtime_error", "timeout", "crashed", "no_triton",
                "forbidden", "hacked", "infra_error"}
    for p in ATTACKS:
        h = HEADERS[p.name]
        assert set(h["expect"]) <= verdicts, p.name
        assert (ROOT / h["task"]).is_file(), p.name
        if "then" in h:
            assert (ROOT / h["then"]).is_file(), p.name
        if "witness" in h:
            assert (ROOT / h["witness"]).is_file(), p.name
        assert h["device"] in ("cpu", "gpu", "any"), p.name
        assert '"""' in p.read_text().split("\n", 2)[1], f"{p.name}: the second line must open the docstring"
