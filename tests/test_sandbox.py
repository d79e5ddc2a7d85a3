"""Sandbox and worker-lifecycle properties of the evaluator (CPU path).

    .venv/bin/python -m pytest tests/test_sandbox.py -q
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil  # noqa: F401  (only to fail loudly if the test environment lacks it)
import pytest
from conftest import ROOT

from drk.gym import EvalOptions, EvalRequest, LocalPool
from drk.gym.sandbox.audit import redact, scrubbed_env, secret_values
from drk.gym.sandbox.isolation import SANDBOX_UID_BASE
from drk.tasks import task_from_file

TASK = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")
GOOD = (ROOT / "data/query_solutions/001_scaled_tanh_bias.py").read_text()
SECRET = "sk-drk-test-0123456789abcdef"


def opts(**kw) -> EvalOptions:
    return EvalOptions(device="cpu", input_budget_mb=0.25, **kw)


def test_scrubbed_env_drops_secrets():
    env = scrubbed_env({"OPENAI_API_KEY": SECRET, "HF_TOKEN": "hf_x" * 4, "PATH": "/usr/bin", "AWS_SECRET": "x" * 9,
                        "TRITON_CACHE_DIR": "/tmp/t", "MY_PASSWORD": "p" * 9, "HOME": "/root"})
    assert SECRET not in env.values() and "HF_TOKEN" not in env and "MY_PASSWORD" not in env and "HOME" not in env
    assert env["PATH"] == "/usr/bin" and env["TRITON_CACHE_DIR"] == "/tmp/t"
    assert redact(f"key={SECRET}!", secret_values({"OPENAI_API_KEY": SECRET})) == "key=[redacted]!"
    # terminal escapes and NULs from a candidate's output never reach a terminal or a prompt; lines stay
    assert redact("a\x1b[2J\x07b\x00\r\n\tc", []) == "a\ufffd[2J\ufffdb\ufffd\ufffd\n\tc"


def test_secrets_never_reach_the_candidate_or_the_result(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    leak = (ROOT / "tests/corpus/hack_leak_env_in_error.py").read_text()
    probe = GOOD.replace("return scaled_tanh_bias(x, self.bias, self.scale)",
                         "raise RuntimeError('K=' + str(torch.serialization.os.environ.get('OPENAI_API_KEY')))")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        r1, r2 = pool.evaluate_batch([EvalRequest(TASK, leak, opts()), EvalRequest(TASK, probe, opts())])
    assert r1.verdict == "runtime_error" and "ENV" in r1.error
    assert SECRET not in r1.error and "OPENAI_API_KEY" not in r1.error
    assert r2.verdict == "runtime_error" and "K=None" in r2.error


def test_the_frozen_counter_copies_carry_no_number_a_candidate_could_have_moved(tmp_path):
    """The fork server shows candidates copies of the host-wide running counters, made at its start. Copies of
    the values then carried whatever a candidate had set them to before a fork server started (a new pool, or a
    restart): attack p03's mark on the THP fault counter, left by the attack suite's main batch, reached the
    witness evaluated alone in a pool started 6 s later. Every count in the copies is now 0, in the format
    readers expect (names such as cpu0 or dma32 kept); the THP folder's settings, which only the host's root
    can change, stay as they are."""
    from drk.gym.sandbox import zygote

    host = tmp_path / "host"
    host.mkdir()
    (host / "stat").write_text("cpu  1234 0 567\ncpu12 12 3\nintr 99 0 1\nbtime 1700000000\n")
    (host / "loadavg").write_text("0.52 0.58 0.59 1/345 12345\n")
    (host / "vmstat").write_text("pgscan_kswapd_dma32 77\nthp_fault_alloc 27\n")
    thp = host / "thp"
    (thp / "hugepages-2048kB" / "stats").mkdir(parents=True)
    (thp / "khugepaged").mkdir()
    (thp / "enabled").write_text("always [madvise] never\n")
    (thp / "hpage_pmd_size").write_text("2097152\n")
    (thp / "hugepages-2048kB" / "stats" / "anon_fault_alloc").write_text("27\n")
    (thp / "khugepaged" / "pages_to_scan").write_text("4096\n")
    (thp / "khugepaged" / "pages_collapsed").write_text("5\n")
    copies = zygote.freeze_counters(str(tmp_path / "frozen"), counters=[str(host / n) for n in ("stat", "loadavg", "vmstat")],
                                    trees=[str(thp)])
    read = {Path(k).name: Path(v).read_text() for k, v in copies.items() if Path(v).is_file()}
    assert read["stat"] == "cpu  0 0 0\ncpu12 0 0\nintr 0 0 0\nbtime 0\n"
    assert read["loadavg"] == "0.0 0.0 0.0 0/0 0\n"
    assert read["vmstat"] == "pgscan_kswapd_dma32 0\nthp_fault_alloc 0\n"
    tree = Path(copies[str(thp)])
    assert (tree / "enabled").read_text() == "always [madvise] never\n"
    assert (tree / "hpage_pmd_size").read_text() == "2097152\n"
    assert (tree / "khugepaged" / "pages_to_scan").read_text() == "4096\n"
    assert (tree / "hugepages-2048kB" / "stats" / "anon_fault_alloc").read_text() == "0\n"
    assert (tree / "khugepaged" / "pages_collapsed").read_text() == "0\n"
    # a later fork server of the slot (a restart) makes them again over its predecessor's read-only copies
    again = zygote.freeze_counters(str(tmp_path / "frozen"), counters=[str(host / "stat")], trees=[])
    assert Path(again[str(host / "stat")]).read_text() == read["stat"]


def test_without_root_the_sandbox_itself_shows_the_counter_copies_and_bounds_its_tmpfs():
    """As an ordinary user (user namespaces) the candidates of a slot share the sandbox's /proc and tmpfs, so
    bubblewrap puts the zeroed counter copies over /proc's and /sys's files, hides the cgroup tree, and gives
    /tmp, /dev/shm and every hidden folder a size (attacks n03, n05, n06, p02, p03 checked so as an unprivileged
    user; CI runs as root, where each candidate gets its own /proc and tmpfs). The argv alone here: the order
    matters, since bubblewrap mounts in argument order (a copy bound before /proc is mounted would be hidden)."""
    from drk.gym.sandbox import isolation

    iso = isolation.Isolation(isolation.USERNS, "/usr/bin/bwrap")
    argv = isolation.bwrap_argv(iso, counters={"/proc/stat": "/slot/frozen/0-stat"}, hidden_trees=("/sys",),
                                tmpfs_mb={"/tmp": 100, "/dev/shm": 10})
    pairs = list(zip(argv, argv[1:]))
    at = argv.index("/proc/stat")
    assert argv[at - 2:at + 1] == ["--ro-bind", "/slot/frozen/0-stat", "/proc/stat"] and at > argv.index("--proc")
    assert ("--tmpfs", "/sys") in pairs and ("--remount-ro", "/sys") in pairs
    t = argv.index("/tmp", argv.index("--tmpfs"))
    assert argv[t - 3:t + 1] == ["--size", str(100 << 20), "--tmpfs", "/tmp"]
    s = argv.index("/dev/shm")
    assert argv[s - 5:s + 1] == ["--perms", "1777", "--size", str(10 << 20), "--tmpfs", "/dev/shm"]
    assert all(argv[i - 2] == "--size" for i, a in enumerate(argv) if a == "--tmpfs" and argv[i + 1] in
               isolation.hidden_roots())
    assert "--size" not in isolation.bwrap_argv(iso)  # as root the candidates' own tmpfs are bounded instead


def test_a_folder_its_owner_made_unreadable_is_removed_without_root_too():
    """Attack i04 leaves a folder of mode 000 holding a file. As root the fork server's clean-up removes it
    anyway; without root (user namespaces, the fork server and the candidate share a uid) rm could not enter it
    and the next candidate found it. The clean-up as an unprivileged owner (here: a forked child dropped to
    nobody when the test runs as root) removes it."""
    from drk.gym.sandbox import zygote

    nobody = 65534
    top = tempfile.mkdtemp(prefix="drk-test-rm-", dir="/tmp")
    try:
        if os.geteuid() == 0:
            os.chown(top, nobody, nobody)
        pid = os.fork()
        if pid == 0:  # the child: drop to nobody (as root), make the tree, clean it up, report by exit status
            code = 2
            try:
                if os.geteuid() == 0:
                    os.setgroups([])
                    os.setgid(nobody)
                    os.setuid(nobody)
                locked = Path(top) / "cand" / "deep" / "locked"
                locked.mkdir(parents=True)
                (locked / "f").write_text("x")
                locked.chmod(0)
                (Path(top) / "cand" / "deep").chmod(0)
                zygote.remove_trees([os.path.join(top, "cand")])
                code = 1 if os.path.lexists(os.path.join(top, "cand")) else 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the unreadable folder was left behind"
    finally:
        subprocess.run(["rm", "-rf", top], check=False)


def test_with_the_static_rules_off_the_sandbox_and_the_evidence_judge_alone(tmp_path, monkeypatch):
    """DRK_STATIC_RULES=off, an operator's switch for red-team runs (never a request option): the static
    layer's rejections are skipped, so a suite shows what the OS sandbox and the judge's evidence catch
    without it, and every result says the rules were off."""
    source = "import gc  # a module the static rules refuse\n" + GOOD
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        on = pool.evaluate(EvalRequest(TASK, source, opts()))
    monkeypatch.setenv("DRK_STATIC_RULES", "off")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        off = pool.evaluate(EvalRequest(TASK, source, opts()))
    assert on.verdict == "forbidden" and "gc" in on.error
    assert off.verdict == "ok", (off.verdict, off.error)
    assert off.protocol.get("static_rules") == "off" and "static_rules" not in on.protocol


def _pool_uids(pool: LocalPool) -> set[int]:
    """The candidate uids this pool's fork servers drop to (from the account files they give the sandbox);
    other evaluators on the host have their own."""
    uids = set()
    for passwd in Path(pool.root).rglob("etc/passwd"):
        uids |= {int(line.split(":")[2]) for line in passwd.read_text().splitlines() if line.startswith("drk-sandbox")}
    uids = {u for u in uids if u >= SANDBOX_UID_BASE}  # the judge's own uid is named there too
    assert uids
    return uids


def _candidate_pids(uids: set[int]) -> list[int]:
    """Processes running as one of `uids` (the fork server's children)."""
    return [p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"].real in uids]


@pytest.mark.skipif(os.geteuid() != 0, reason="candidate uids exist only when the evaluator runs as root")
def test_a_candidate_process_killed_mid_evaluation_is_crashed_and_the_next_runs_fresh(tmp_path):
    slow = GOOD.replace("return scaled_tanh_bias(x, self.bias, self.scale)",
                        "out = scaled_tanh_bias(x, self.bias, self.scale)\n"
                        "        for _ in range(200):\n            out = out + 0\n"
                        "        import math\n        [math.factorial(3000) for _ in range(300)]\n        return out")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"  # warm: judge + fork server up
        uids = _pool_uids(pool)
        assert _candidate_pids(uids) == [], "a candidate process outlived its evaluation"
        seen: list[int] = []

        def assassin():
            for _ in range(200):
                time.sleep(0.05)
                if pids := _candidate_pids(uids):
                    time.sleep(1.0)
                    seen.extend(pids)
                    for p in pids:
                        os.kill(p, signal.SIGKILL)
                    return

        t = threading.Thread(target=assassin)
        t.start()
        r = pool.evaluate(EvalRequest(TASK, slow, opts(trials=50)))
        t.join()
        assert seen and r.verdict == "crashed" and "died" in r.error
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"
        assert _candidate_pids(uids) == []


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="candidate uids exist only when the evaluator runs as root")
def test_another_evaluator_on_the_host_cannot_kill_this_ones_candidates(tmp_path):
    """Two evaluators on one host (a `drk gym serve` beside a `drk eval`, two users' jobs) each kill every
    process of their candidates' uid after an evaluation; sharing a uid would let one kill the other's
    candidate mid-run, a verdict decided by the neighbour."""
    slow = GOOD.replace("return scaled_tanh_bias(x, self.bias, self.scale)",
                        "import math\n        [math.factorial(3000) for _ in range(100)]\n"
                        "        return scaled_tanh_bias(x, self.bias, self.scale)")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path / "a")) as a, \
            LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path / "b")) as b:
        assert a.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"
        assert b.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"
        assert not _pool_uids(a) & _pool_uids(b), "two evaluators share candidate uids"
        fut = a.submit(EvalRequest(TASK, slow, opts(trials=20)))
        while not fut.done():  # the neighbour finishes (and sweeps its uids) many times meanwhile
            assert b.evaluate(EvalRequest(TASK, GOOD, opts(trials=1))).verdict == "ok"
        r = fut.result()
        assert r.verdict == "ok", (r.verdict, r.error)


@pytest.mark.slow
def test_timeout_kills_the_process_group_and_the_slot_recovers(tmp_path):
    hang = (ROOT / "tests/corpus/hang_loop.py").read_text()
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        t0 = time.time()
        r = pool.evaluate(EvalRequest(TASK, hang, opts(timeout_s=8)))
        assert r.verdict == "timeout" and time.time() - t0 < 60
        assert "interpreter" in r.error  # on CPU a correct kernel can be slow there: the text says how to help it
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"


@pytest.mark.slow
def test_dead_judge_is_restarted(tmp_path):
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path), slack_s=30) as pool:
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"
        judge = pool.slots[0].proc
        os.killpg(judge.pid, signal.SIGKILL)
        judge.wait()
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"
        assert pool.slots[0].proc.pid != judge.pid


def _drk(args: list[str], env_extra: dict) -> subprocess.CompletedProcess:
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-m", "drk", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=ROOT)


@pytest.mark.slow
def test_without_a_sandbox_drk_refuses_unless_the_user_says_unsafe(tmp_path):
    task = "data/queries/001_scaled_tanh_bias.py"
    sol = "data/query_solutions/001_scaled_tanh_bias.py"
    no_bwrap = {"DRK_BWRAP": str(tmp_path / "no-such-bwrap")}
    r = _drk(["eval", task, "--solution", sol, "--device", "cpu", "--out", str(tmp_path / "a")], no_bwrap)
    assert r.returncode == 2 and "cannot isolate candidate code" in r.stderr and "Traceback" not in r.stderr
    r = _drk(["--unsafe-no-sandbox", "eval", task, "--solution", sol, "--device", "cpu", "--out",
              str(tmp_path / "b")], no_bwrap)
    assert r.returncode == 0, r.stderr[-800:]
    import json

    res = [json.loads(x) for x in (tmp_path / "b" / "results.jsonl").read_text().splitlines()]
    assert [x["verdict"] for x in res] == ["ok"] and res[0]["versions"]["sandbox"] == "none"


PID_PROBE = GOOD.replace("return scaled_tanh_bias(x, self.bias, self.scale)",
                         "_os = torch.serialization.os\n"
                         "        raise RuntimeError('PIDS %d %s %s' % (_os.getpid(), _os.readlink('/proc/self'), "
                         "sorted(int(n) for n in _os.listdir('/proc') if n.isdigit())))")


@pytest.mark.skipif(os.geteuid() != 0, reason="a pid namespace per candidate needs the evaluator to run as root")
def test_every_candidate_is_pid_1_of_its_own_namespace_and_sees_no_other_process(tmp_path, monkeypatch):
    """The slot's pid namespace hands out pids in order, so a candidate's pid would tell how many pids its
    predecessor used (attack m02). Each candidate is pid 1 of a namespace of its own, /proc included: the
    second candidate of a slot sees the same as the first, and neither sees the judge, the fork server or
    another candidate."""
    monkeypatch.setenv("DRK_STATIC_RULES", "off")  # the probe reads /proc: the early layers would refuse it
    monkeypatch.setenv("DRK_AUDIT", "off")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        first, second = pool.evaluate_batch([EvalRequest(TASK, PID_PROBE, opts()), EvalRequest(TASK, PID_PROBE, opts())])
    for r in (first, second):
        assert r.verdict == "runtime_error" and "PIDS 1 1 [1]" in r.error, (r.verdict, r.error)
        assert "shared pid namespace" not in r.versions["sandbox"]


def test_a_folder_tree_deeper_than_path_max_and_the_recursion_limit_is_removed(tmp_path):
    """A candidate can nest folders past Python's recursion limit and PATH_MAX, each step relative to the
    last; the fork server's clean-up must still remove them and must not raise (attack n09: a recursive
    removal raised and the fork server died with the slot)."""
    from drk.gym.sandbox.zygote import remove_trees

    top = tmp_path / "cand"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(3000):  # 3000 x "dd/" is past PATH_MAX (4096)
        os.mkdir("dd", dir_fd=fd)
        nfd = os.open("dd", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
    os.close(fd)
    (tmp_path / "file").write_text("x")
    os.symlink(tmp_path / "keep", tmp_path / "link")
    (tmp_path / "keep").write_text("kept: links are removed, never followed")
    remove_trees([str(top), str(tmp_path / "file"), str(tmp_path / "link"), str(tmp_path / "absent")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep"]


def test_a_project_folder_on_the_path_is_never_bound_whole_into_the_sandbox(tmp_path):
    """The folder of the script that started drk, or one in PYTHONPATH, is on the workers' sys.path; binding it
    whole showed its other files to every candidate (attack p01: a 0644 file beside the script came back in
    an error text). Only what was imported from it is bound; installed packages stay whole."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "secret.env").write_text("API_KEY=x\n")
    (project / "mylib.py").write_text("VALUE = 1\n")
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import mylib\n"
            "from drk.gym.sandbox import isolation\n"
            "print(json.dumps(isolation._needed_paths()))\n")
    r = subprocess.run([sys.executable, "-c", code, str(project)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "src")), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    import json

    paths = json.loads(r.stdout.strip().splitlines()[-1])
    real = os.path.realpath(project)
    assert os.path.join(real, "mylib.py") in paths
    assert not any(p in (str(project), real) or p.endswith("secret.env") for p in paths), paths
    assert os.path.realpath(ROOT / "src" / "drk") in paths and os.path.realpath(ROOT / "src") not in paths
    import torch

    assert any(os.path.realpath(torch.__file__).startswith(os.path.realpath(p) + os.sep) for p in paths)


def test_a_fork_server_whose_channel_failed_is_gone_even_while_its_process_lingers(tmp_path):
    """A fork server that stopped answering (its channel broken) while its process, or the sandbox around
    it, is still there must count as gone, so the next spawn starts a new one instead of failing every later
    candidate of the slot on the dead channel (attack n09: six in a row, never restarted)."""
    import socket

    from drk.gym.judge.forkserver import ForkServer, ForkServerGone

    fs = ForkServer.__new__(ForkServer)  # only its channel: no sandbox needed for what is tested
    fs.lock = threading.Lock()
    fs.proc = subprocess.Popen(["sleep", "60"])
    fs.sock, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fs.broken = False
    try:
        assert fs.alive()
        far.close()
        with pytest.raises(ForkServerGone):
            fs._call({"op": "usage", "id": "x"})
        assert fs.proc.poll() is None and not fs.alive()
    finally:
        fs.proc.kill()
        fs.proc.wait()
        fs.sock.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="uid pairs are claimed only when the evaluator runs as root")
def test_uid_pairs_are_exclusive_while_held_and_come_back_when_released():
    from drk.gym.sandbox.isolation import claim_uid_pair

    a, fa = claim_uid_pair()
    b, fb = claim_uid_pair()
    assert not set(a) & set(b) and all(u >= SANDBOX_UID_BASE for u in a + b)
    os.close(fa)
    c, fc = claim_uid_pair()
    os.close(fb)
    os.close(fc)
    assert c == a  # the lowest free pair again: nothing leaks when a holder lets go


def test_seccomp_filter_refuses_namespaces_and_mounts_but_not_threads_or_forks():
    """The filter every candidate process gets: an unprivileged process could otherwise unshare a user
    namespace and hold CAP_SYS_ADMIN there; threads, forks and subprocesses (Triton's compiler) must work."""
    code = (
        "import ctypes, os, subprocess, threading\n"
        "from drk.gym.sandbox import seccomp\n"
        "assert seccomp.install()\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "for flags in (0x10000000, 0x08000000, 0x00020000, 0x40000000):\n"
        "    assert libc.unshare(flags) == -1 and ctypes.get_errno() == 1, flags\n"
        "assert libc.mount(b'none', b'/mnt', b'tmpfs', 0, None) == -1 and ctypes.get_errno() == 1\n"
        "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
        "assert subprocess.run(['true']).returncode == 0\n"
        "assert subprocess.run(['unshare', '-U', 'true'], capture_output=True).returncode != 0\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(7)\n"
        "assert os.waitpid(pid, 0)[1] >> 8 == 7\n"
        "print('filtered')\n")
    from drk.gym.sandbox import seccomp
    if seccomp.native_arch() is None:
        pytest.skip("no seccomp table for this architecture")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert r.returncode == 0 and "filtered" in r.stdout, r.stderr[-2000:]


def _frame_in(path: str, body: str = "frame = sys._getframe()"):
    """A real frame whose code claims to live at `path` (how the audit hook sees a library's frame)."""
    scope: dict = {"sys": sys}
    exec(compile(body, path, "exec"), scope)
    return scope["frame"]


def test_triton_compiling_its_launcher_is_allowed_where_site_packages_lie_under_the_stdlib(tmp_path):
    """A correct kernel must not be rejected because of how Python is installed: in a Python built from
    source (the H200's image), site-packages is /usr/local/lib/python3.12/site-packages, inside the stdlib
    folder, and the hook skipped Triton's own frames as if they were the stdlib, so Triton's C compiler call
    for its launcher stub was refused and every GPU candidate was `forbidden`."""
    from drk.gym.sandbox.audit import Policy

    import triton  # noqa: F401  (the policy finds Triton's folder from sys.modules)

    pol = Policy(str(tmp_path), str(tmp_path / "cache"), [])
    triton_dir = pol.triton_dirs[0]
    pol.stdlib_dir = str(Path(triton_dir).parent.parent) + os.sep  # site-packages' parent, as on that image
    assert pol._from_library(_frame_in(triton_dir + "runtime/build.py"), pol.triton_dirs)
    # ...while code outside Triton calling through the stdlib is still not Triton's
    outer = _frame_in(str(tmp_path / "solution.py"), "def call():\n    return sys._getframe()\nframe = call()")
    assert not pol._from_library(outer, pol.triton_dirs)
    stdlib_like = _frame_in(pol.stdlib_dir + "subprocess.py",
                            "def call(f):\n    return sys._getframe()\nframe = call(None)")
    assert stdlib_like.f_back is not None and not pol._from_library(stdlib_like, pol.triton_dirs)


def _call_from(path: str, code: str, scope: dict) -> None:
    exec(compile(code, path, "exec"), scope)


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc on PATH")
def test_triton_may_run_its_compiler_named_by_a_bare_cc_variable(tmp_path, monkeypatch):
    """A correct kernel must not be rejected because the host sets CC=gcc (the H200's image does): Triton
    then runs `gcc` by bare name, which the hook resolved against the work folder and refused, so every GPU
    candidate was `forbidden`. The name resolves on the PATH the process will really search."""
    from drk.gym.sandbox.audit import Policy, allowed_compilers

    import triton  # noqa: F401

    monkeypatch.setenv("CC", "gcc")
    pol = Policy(str(tmp_path), str(tmp_path / "cache"), allowed_compilers())
    build = pol.triton_dirs[0] + "runtime/build.py"
    _call_from(build, "pol.check_exec(['gcc', '-v'], search_path=True)", {"pol": pol})  # no PermissionError
    # the same bare name with a PATH that finds a planted `gcc` first is not Triton's compiler
    fake = tmp_path / "bin" / "gcc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    with pytest.raises(PermissionError, match="gcc"):
        _call_from(build, "pol.check_exec(['gcc', '-v'], {'PATH': bindir}, search_path=True)",
                   {"pol": pol, "bindir": str(fake.parent)})
    with pytest.raises(PermissionError, match="gcc"):
        _call_from(build, "pol.check_exec(['gcc', '-v'], {b'PATH': bindir.encode()}, search_path=True)",
                   {"pol": pol, "bindir": str(fake.parent)})
    # os.exec*/posix_spawn events name the file executed: a bare `gcc` there is one in the working folder
    with pytest.raises(PermissionError, match="gcc"):
        _call_from(build, "pol.check_exec('gcc')", {"pol": pol})
    # and the real compiler started from candidate code is still refused
    with pytest.raises(PermissionError, match="outside Triton"):
        _call_from(str(tmp_path / "solution.py"), "pol.check_exec(['gcc', '-v'], search_path=True)", {"pol": pol})


def test_the_c_compiler_triton_runs_is_inside_the_candidates_view(tmp_path, monkeypatch):
    """A correct kernel must not be rejected because the host's C compiler lives outside the system folders:
    the H200's image sets CC=/opt/gcc/bin/gcc, /opt is hidden from candidates, so Triton could not build its
    launcher there and every GPU candidate was `forbidden`. The compiler's install prefix is bound."""
    from drk.gym.sandbox.isolation import _needed_paths

    cc = tmp_path / "gcc" / "bin" / "gcc"
    cc.parent.mkdir(parents=True)
    (tmp_path / "gcc" / "libexec" / "gcc").mkdir(parents=True)  # a compiler's own tree
    cc.write_text("#!/bin/sh\n")
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    assert str(tmp_path / "gcc") in _needed_paths()
    monkeypatch.setenv("CC", "gcc")  # a bare name: found on PATH
    monkeypatch.setenv("PATH", f"{cc.parent}{os.pathsep}{os.environ['PATH']}")
    assert str(tmp_path / "gcc") in _needed_paths()
    # a compiler in a folder that is not a compiler's tree (a home folder): the file only, never the folder
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / ".ssh").mkdir()
    mine = home / "bin" / "gcc"
    mine.write_text("#!/bin/sh\n")
    mine.chmod(0o755)
    monkeypatch.setenv("CC", str(mine))
    needed = _needed_paths()
    assert str(mine) in needed
    assert not any(p in (str(home), str(home / "bin")) for p in needed)


_ORPHAN_PARENT = """
import sys, threading
from drk.gym import EvalOptions, EvalRequest, LocalPool
from drk.tasks import task_from_file
task = task_from_file(sys.argv[1])
slow = open(sys.argv[2]).read()
pool = LocalPool(device="cpu", workers=1, cache_dir=sys.argv[3])
threading.Thread(target=pool.evaluate, daemon=True,
                 args=(EvalRequest(task, slow, EvalOptions(device="cpu", input_budget_mb=0.25, trials=400)),)).start()
import time
while not pool.slots or pool.slots[0].proc is None:
    time.sleep(0.05)
print(pool.slots[0].proc.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_a_killed_evaluator_takes_its_judge_and_candidates_with_it(tmp_path):
    """A parent killed with SIGKILL (or by `timeout`) gets no chance to say bye, and a judge busy
    mid-evaluation does not read its socket; left running, it would hold the device memory the next
    evaluator on the GPU sizes its work by (docs/measurements/evaluator-isolation.md#gpu)."""
    slow = GOOD.replace("return scaled_tanh_bias(x, self.bias, self.scale)",
                        "import math\n        [math.factorial(3000) for _ in range(300)]\n"
                        "        return scaled_tanh_bias(x, self.bias, self.scale)")
    (tmp_path / "slow.py").write_text(slow)
    parent = subprocess.Popen([sys.executable, "-c", _ORPHAN_PARENT, str(ROOT / "data/queries/001_scaled_tanh_bias.py"),
                               str(tmp_path / "slow.py"), str(tmp_path / "cache")], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    judge = psutil.Process(int(parent.stdout.readline()))
    deadline = time.time() + 120
    while time.time() < deadline and not any("zygote" in _cmdline(c) for c in _children(judge)):
        time.sleep(0.2)  # the evaluation is under way: the fork server is up
    time.sleep(5.0)  # its candidate is running (a few trials in)
    family = [judge, *_children(judge)]
    parent.kill()
    parent.wait()
    gone, alive = psutil.wait_procs(family, timeout=15)
    assert not alive, f"outlived the evaluator that started them: {[(p.pid, _cmdline(p)[:200]) for p in alive]}"


def _cmdline(p: "psutil.Process") -> str:
    """A child listed a moment ago may be gone by now (the fork server's short-lived probe children): ''."""
    try:
        return " ".join(p.cmdline())
    except psutil.NoSuchProcess:
        return ""


def _children(p: "psutil.Process") -> list:
    try:
        return p.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


_FIND_MAPPING = '''
import functools
import time
import torch
import triton
_sys = functools.reduce(getattr, ("serialization", "s" + "ys"), torch)
_objects = functools.reduce(getattr, ["get_" + "objects"], _sys.modules["g" + "c"])


def mappings():
    return [o.mm for o in _objects() if type(o).__name__ == "Mapped"]
'''

_STASHER = _FIND_MAPPING + '''

class ModelNew(torch.nn.Module):
    def __init__(self, *a, **k):
        super().__init__()

    def forward(self, x):
        for mm in mappings():  # in its own input slot, which a smaller task's layout leaves unused
            mm[240000:240064] = b"STASH-FROM-THE-LAST-CANDIDATE-" * 2 + b"!!!!"
        return (x - x.mean(0)) / x.std(0)
'''

_READER = _FIND_MAPPING + '''

class ModelNew(torch.nn.Module):
    def __init__(self, *a, **k):
        super().__init__()

    def forward(self, *xs):
        seen = any(b"STASH" in bytes(mm[:]) for mm in mappings())
        raise RuntimeError("stash seen: " + str(seen))  # the traceback quotes this line: the answer is not in it
'''


def test_nothing_a_candidate_leaves_in_the_memory_file_reaches_the_next(tmp_path):
    """The judge keeps one memory file for every candidate (fresh pages cost seconds on a big task). A
    candidate process can write anywhere in its own mapping, also where the next task's layout puts no slot
    (015's inputs take 253,440 bytes, 011's whole layout 196,864, and the file is kept); the next candidate
    maps the same file."""
    from drk.tasks import task_from_file

    big = task_from_file(ROOT / "data/queries/015_column_standardize.py")
    small = task_from_file(ROOT / "data/queries/011_masked_mean_last_dim.py")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        pool.evaluate(EvalRequest(big, _STASHER, opts()))
        r = pool.evaluate(EvalRequest(small, _READER, opts()))
    assert "stash seen: False" in r.error, (r.verdict, r.error[-300:])


def test_seccomp_exec_guard_refuses_new_machine_code_in_memory():
    """With the exec guard no new machine code can be put in memory, whatever route is asked for: memory files
    (sealed or not: MFD_NOEXEC_SEAL still maps executable, attacks a20, k02, k10), anonymous executable
    memory (k01), writable-and-executable file mappings (k14), PROT_EXEC added later by mprotect (k12) or
    pkey_mprotect, READ_IMPLIES_EXEC through personality (k15), SysV shared memory attached SHM_EXEC (k16),
    userfaultfd filling an executable page (l01).
    What a process legitimately does still works: the loader mapping a library from a read-only file,
    read-write anonymous memory, threads, and torch's CPU kernels with oneDNN's code generator off. Without
    the guard the memory rules are off, but the keyrings, io_uring and ptrace stay refused (k04, k11)."""
    code = r'''
import ctypes, mmap, os, sys, threading
from drk.gym.sandbox import seccomp
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.syscall.restype = ctypes.c_long
R, W, X, PRIV, ANON = 1, 2, 4, 0x02, 0x20
import torch
guard = sys.argv[1] == "guard"
assert seccomp.install(exec_guard=guard)
if guard:
    torch.backends.mkldnn.enabled = False
out = {}
def mm(prot, flags, fd=-1):
    p = libc.mmap(None, 4096, prot, flags, fd, 0)
    return "refused" if p in (None, ctypes.c_void_p(-1).value) else "allowed"
def call(name, f):
    try:
        out[name] = f()
    except OSError as e:
        out[name] = "refused" if e.errno in (1, 38) else "error %d" % e.errno
out["anon_rw"] = mm(R | W, PRIV | ANON)
out["anon_rx"] = mm(R | X, PRIV | ANON)
out["anon_rwx"] = mm(R | W | X, PRIV | ANON)
lib = os.open(torch.__file__.replace("__init__.py", "lib/libc10.so"), os.O_RDONLY)
out["file_rx"] = mm(R | X, PRIV, lib)
out["file_rwx"] = mm(R | W | X, PRIV, lib)
page = libc.mmap(None, 4096, R | W, PRIV | ANON, -1, 0)
out["mprotect_rx"] = "allowed" if libc.mprotect(page, 4096, R | X) == 0 else "refused"
out["mprotect_r"] = "allowed" if libc.mprotect(page, 4096, R) == 0 else "refused"
out["pkey_mprotect_rx"] = "allowed" if libc.syscall(329, ctypes.c_void_p(page), 4096, R | X, -1) == 0 else "refused"
call("memfd_plain", lambda: (os.close(os.memfd_create("x", 0)), "allowed")[1])
call("memfd_sealed", lambda: (os.close(os.memfd_create("x", 0x0008)), "allowed")[1])
out["personality_query"] = "allowed" if libc.personality(0xFFFFFFFF) >= 0 else "refused"
out["personality_rie"] = "allowed" if libc.personality(0x0400000) >= 0 else "refused"
shm = libc.shmget(0, 4096, 0o1600)
libc.shmat.restype = ctypes.c_void_p
out["shmat_exec"] = "refused" if libc.shmat(shm, None, 0o100000) in (None, ctypes.c_void_p(-1).value) else "allowed"
out["shmat_rw"] = "refused" if libc.shmat(shm, None, 0) in (None, ctypes.c_void_p(-1).value) else "allowed"
libc.shmctl(shm, 0, None)
out["keyctl"] = "refused" if libc.syscall(250, 0, 0) == -1 and ctypes.get_errno() == 1 else "allowed"
out["add_key"] = "refused" if libc.syscall(248, b"user", b"k", b"v", 1, -3) == -1 and ctypes.get_errno() == 1 \
    else "allowed"
out["io_uring"] = "refused" if libc.syscall(425, 4, None) == -1 and ctypes.get_errno() == 1 else "allowed"
out["ptrace"] = "refused" if libc.syscall(101, 0, 0, 0, 0) == -1 and ctypes.get_errno() == 1 else "allowed"
out["userfaultfd"] = "refused" if libc.syscall(323, 0) == -1 and ctypes.get_errno() == 1 else "allowed"
try:
    os.nice(5); out["nice"] = "allowed"
except PermissionError:
    out["nice"] = "refused"
try:
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)); out["sched_idle"] = "allowed"
except PermissionError:
    out["sched_idle"] = "refused"
t = threading.Thread(target=lambda: out.__setitem__("thread", "allowed")); t.start(); t.join()
import socket
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as so:  # host-wide counters (attack n02)
    for name, opt in (("so_cookie", 57), ("so_netns_cookie", 71)):
        try:
            so.getsockopt(socket.SOL_SOCKET, opt, 8); out[name] = "allowed"
        except OSError as e:
            out[name] = "refused" if e.errno == 1 else ("absent" if e.errno in (22, 92) else "error %d" % e.errno)
    out["so_type"] = "allowed" if so.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) == socket.SOCK_STREAM else "wrong"
for name, proto in (("netlink_sock_diag", 4), ("netlink_route", 0)):
    try:
        socket.socket(16, socket.SOCK_RAW, proto).close(); out[name] = "allowed"
    except OSError as e:
        out[name] = "refused" if e.errno == 1 else "error %d" % e.errno
try:  # a pidfd's inode number is a host-wide counter (attack p07)
    os.close(os.pidfd_open(os.getpid())); out["pidfd_open"] = "allowed"
except OSError as e:
    out["pidfd_open"] = "refused" if e.errno == 1 else "error %d" % e.errno
import tempfile
with tempfile.TemporaryFile() as f:  # page-cache state as a channel (attack p04)
    f.write(b"x" * 8192); f.flush()
    try:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED); out["fadvise_dontneed"] = "allowed"
    except OSError as e:
        out["fadvise_dontneed"] = "refused" if e.errno == 1 else "error %d" % e.errno
    os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL); out["fadvise_sequential"] = "allowed"
    try:
        os.preadv(f.fileno(), [bytearray(16)], 0, os.RWF_NOWAIT); out["preadv2_nowait"] = "allowed"
    except BlockingIOError:
        out["preadv2_nowait"] = "allowed"
    except OSError as e:
        out["preadv2_nowait"] = "refused" if e.errno == 1 else "error %d" % e.errno
    out["pread"] = "allowed" if os.preadv(f.fileno(), [bytearray(16)], 0) == 16 else "wrong"
libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
lockme = libc.mmap(None, 4096, R | W, PRIV | ANON, -1, 0)
out["mlock"] = "allowed" if libc.mlock(lockme, 4096) == 0 else (
    "refused" if ctypes.get_errno() == 1 else "error %d" % ctypes.get_errno())
libc.munlock(ctypes.c_void_p(lockme), 4096)
out["mlockall"] = "allowed" if libc.mlockall(1) == 0 else (
    "refused" if ctypes.get_errno() == 1 else "error %d" % ctypes.get_errno())
libc.munlockall()
out["map_locked"] = mm(R | W, PRIV | ANON | 0x2000)
import tempfile
with tempfile.TemporaryFile() as f:  # KEEP_SIZE would reserve blocks past RLIMIT_FSIZE (attack m14)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    out["fallocate_keep_size"] = "allowed" if libc.fallocate(f.fileno(), 1, 0, 1 << 20) == 0 else (
        "refused" if ctypes.get_errno() == 95 else "error %d" % ctypes.get_errno())
    os.posix_fallocate(f.fileno(), 0, 8192)  # still works: glibc writes the blocks when told "not supported"
    out["posix_fallocate"] = "allowed" if os.fstat(f.fileno()).st_size == 8192 else "wrong"
x = torch.randn(2, 3, 16, 16)
y = torch.nn.functional.conv2d(x, torch.randn(4, 3, 3, 3))
out["conv"] = "allowed" if y.shape == (2, 4, 14, 14) else "wrong"
out["matmul"] = "allowed" if (torch.randn(64, 64) @ torch.randn(64, 64)).shape == (64, 64) else "wrong"
lin = torch.nn.functional.linear(x.bfloat16().flatten(1), torch.randn(8, 768).bfloat16())
out["bf16_linear"] = "allowed" if lin.shape == (2, 8) else "wrong"
print(out)
'''
    from drk.gym.sandbox import seccomp
    if seccomp.native_arch() != "x86_64":
        pytest.skip("the probe uses x86_64 system call numbers")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    runs = {}
    for mode in ("guard", "plain"):
        r = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        runs[mode] = eval(r.stdout.strip().splitlines()[-1])
    refused_with_guard = {"anon_rx", "anon_rwx", "file_rwx", "mprotect_rx", "pkey_mprotect_rx", "memfd_plain",
                          "memfd_sealed", "personality_rie", "shmat_exec", "keyctl", "add_key", "io_uring", "ptrace",
                          "userfaultfd", "nice", "sched_idle", "fallocate_keep_size", "so_cookie", "so_netns_cookie",
                          "netlink_sock_diag", "mlock", "mlockall", "map_locked", "pidfd_open", "fadvise_dontneed",
                          "preadv2_nowait"}
    always_refused = {"personality_rie", "shmat_exec", "keyctl", "add_key", "io_uring", "ptrace", "userfaultfd", "nice",
                      "sched_idle", "fallocate_keep_size", "so_cookie", "so_netns_cookie", "netlink_sock_diag",
                      "pidfd_open", "fadvise_dontneed", "preadv2_nowait"}
    for mode, out in runs.items():
        refused = refused_with_guard if mode == "guard" else always_refused
        for name, seen in out.items():
            assert seen == ("refused" if name in refused else "allowed"), (mode, name, seen, out)
    assert set(runs["guard"]) >= refused_with_guard | {"anon_rw", "file_rx", "thread", "conv", "matmul"}


NOEXEC_PROBE = '''
import os


def _noexec_everywhere_writable():
    """Raises unless the candidate's writable folders are mounted noexec (statvfs, outside any layer)."""
    for d in (os.getcwd(), "/tmp", "/dev/shm", "/dev/zero", "/dev/null"):  # device nodes are bound on their own
        if not os.statvfs(d).f_flag & os.ST_NOEXEC:
            raise RuntimeError(d + " is executable")
    leaked = [k for k in os.environ if k.startswith("DRK_") and k != "DRK_AUDIT"]
    if leaked:
        raise RuntimeError("the judge's switches reached the candidate: " + ", ".join(leaked))


_noexec_everywhere_writable()
'''


def test_the_exec_guard_makes_every_writable_folder_noexec_and_results_say_when_it_is_off(tmp_path, monkeypatch):
    """On CPU slots the exec guard is on by default: the candidate's work folder, /tmp and /dev/shm are
    noexec (a correct kernel still runs); DRK_EXEC_GUARD=off leaves them executable and every result says so
    in `versions.sandbox`, so results from the weaker sandbox never mix with the others. The switch reaches
    the judge through its scrubbed environment, and no switch of the judge's reaches the candidate."""
    source = GOOD + NOEXEC_PROBE
    monkeypatch.setenv("DRK_PROFILER", "ambient")
    monkeypatch.setenv("DRK_GPU_LOCK", "off")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path / "on")) as pool:
        on = pool.evaluate(EvalRequest(TASK, source, opts()))
    monkeypatch.setenv("DRK_EXEC_GUARD", "off")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path / "off")) as pool:
        off = pool.evaluate(EvalRequest(TASK, source, opts()))
    assert on.verdict == "ok", (on.verdict, on.error)
    assert "exec guard" not in on.versions["sandbox"]
    assert off.verdict != "ok" and "is executable" in (off.error or ""), (off.verdict, off.error)
    assert "no exec guard" in off.versions["sandbox"]


@pytest.mark.parametrize("attack,why", [("a17_native_prebuilt_so_ctypes.py", "failed to map segment"),
                                        ("a20_native_memfd_ctypes.py", "Operation not permitted"),
                                        ("a16_native_triton_build.py", "Operation not permitted")])
def test_native_code_a_candidate_brings_fails_in_the_os_without_the_early_layers(tmp_path, monkeypatch, attack, why):
    """With the audit hook and the static rules off (the operator's red-team switches), a shared object a
    candidate carries (a17) or writes into a memory file (a20) still cannot be loaded: the operating system
    refuses to map it executable; one it would compile with Triton's build helper (a16) is not even built,
    since a CPU slot's candidate may start no program (the C compiler)."""
    monkeypatch.setenv("DRK_AUDIT", "off")
    monkeypatch.setenv("DRK_STATIC_RULES", "off")
    src = (ROOT / "tests" / "attacks" / attack).read_text()
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        res = pool.evaluate(EvalRequest(TASK, src, opts(timeout_s=60)))
    assert res.verdict == "runtime_error" and why in (res.error or ""), (res.verdict, (res.error or "")[-600:])
    assert res.protocol.get("audit_hook") == "off" and res.protocol.get("static_rules") == "off"


def test_landlock_allows_writes_only_beneath_the_given_folders(tmp_path):
    """/proc/self/mem lets a process write into its own read-only code (attack k13); after
    `restrict_writes` it opens for reading only, as does any file outside the given folders, while files
    beneath them are written and renamed across folders as Triton's cache does."""
    from drk.gym.sandbox import landlock

    if landlock.available():
        pytest.skip(landlock.available())
    (tmp_path / "w" / "a").mkdir(parents=True)
    (tmp_path / "w" / "b").mkdir()
    (tmp_path / "other").mkdir()
    code = (
        "import os, sys\n"
        "from drk.gym.sandbox import landlock\n"
        "import ctypes; ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)\n"
        "w, other = sys.argv[1], sys.argv[2]\n"
        "landlock.restrict_writes([w])\n"
        "out = {}\n"
        "open(w + '/a/f', 'w').write('x'); os.rename(w + '/a/f', w + '/b/f'); out['beneath'] = 'allowed'\n"
        "for name, path in (('proc_mem', '/proc/self/mem'), ('other', other + '/f')):\n"
        "    try:\n"
        "        os.close(os.open(path, os.O_WRONLY | os.O_CREAT)); out[name] = 'allowed'\n"
        "    except PermissionError:\n"
        "        out[name] = 'refused'\n"
        "os.close(os.open('/proc/self/mem', os.O_RDONLY)); out['proc_mem_read'] = 'allowed'\n"
        "print(out)\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "w"), str(tmp_path / "other")],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert r.returncode == 0, r.stderr[-2000:]
    assert eval(r.stdout.strip()) == {"beneath": "allowed", "proc_mem": "refused", "other": "refused",
                                      "proc_mem_read": "allowed"}, r.stdout


VARYING_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Doubles a prefix of x whose length depends on x's values (1000 to 3999 elements)."""

    def forward(self, x):
        k = int(x[0].abs().item() * 10007) % 3000 + 1000
        return x[:k] * 2.0


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
'''

VARYING_SOLUTION = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        k = int(x[0].abs().item() * 10007) % 3000 + 1000
        out = torch.empty(k, dtype=x.dtype, device=x.device)
        double_kernel[(triton.cdiv(k, 1024),)](x, out, k, BLOCK=1024)
        return out
'''


def test_an_evaluation_whose_outputs_outgrow_the_exchange_file_starts_again_with_a_larger_one(tmp_path):
    """The exchange file is sent to a candidate process only before its code is loaded (a descriptor arriving
    later could be caught by a candidate thread and mapped executable). A task whose output size depends on
    its input values can outgrow the file reserved from its first inputs; the evaluation then starts again in
    a new process with a larger file, and a correct kernel is still `ok`."""
    task_file = tmp_path / "varying.py"
    task_file.write_text(VARYING_TASK)
    task = task_from_file(task_file)
    from drk.gym.common import harness

    module = harness.load_module(VARYING_TASK, "drk_test_varying")

    def k(seed: int) -> int:
        x = harness.make_inputs(module, seed, "cpu")[0]
        return int(x[0].abs().item() * 10007) % 3000 + 1000

    # a seed whose first trial's output is smaller than a later trial's: the reserved file is outgrown
    seed = next(s for s in range(1000) if k(s) < max(k(s + j) for j in range(1, 4)) - 512)
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path / "cache")) as pool:
        res = pool.evaluate(EvalRequest(task, VARYING_SOLUTION, opts(trials=4, seed=seed, timeout_s=120)))
    assert res.verdict == "ok", (res.verdict, res.error[-600:])
    assert res.shapes.get("exchange_restarts", 0) >= 1, res.shapes


def test_a_candidate_keys_triton_modules_by_the_judges_platform_key(tmp_path, monkeypatch):
    """Triton names a native module's cache folder by a hash of its source and `platform_key()`, which asks
    the `file` program about the interpreter. Under the exec guard a candidate may start no program, so its
    own answer would differ from the judge's ("...,64bit," against "...,64bit,ELF"), and on CUDA the lookup of
    the driver utilities the judge built into the base cache found nothing: every candidate `infra_error`.
    The fork server pins the judge's key before any candidate exists, so no candidate runs `file` either."""
    from triton.runtime.build import platform_key

    monkeypatch.setenv("DRK_STATIC_RULES", "off")  # the probe names Triton's build module, which they refuse
    probe = GOOD.replace("return scaled_tanh_bias(x, self.bias, self.scale)",
                         "import triton.runtime.build as b\n        raise RuntimeError('PK=' + b.platform_key() + '|')")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        r = pool.evaluate(EvalRequest(TASK, probe, opts()))
    assert r.verdict == "runtime_error", (r.verdict, r.error)
    assert f"PK={platform_key()}|" in r.error, r.error


@pytest.mark.skipif(os.geteuid() != 0, reason="the candidate uid exists only when the evaluator runs as root")
def test_a_folder_bound_for_candidates_is_reachable_by_the_candidate_uid(tmp_path):
    """The fork server binds the slot's read-only folders (the base Triton cache the judge warmed, the judge's
    launchers) at their own paths under the pool's folder, which lies in a hidden root (/tmp) and is mode 0700.
    bwrap made the folders leading to such a bind 0700 and root's, so the candidate uid found nothing there
    and, under the exec guard on CUDA, every candidate died looking for Triton's driver utilities."""
    from drk.gym.sandbox import isolation

    pool = tempfile.mkdtemp(prefix="drk-gym-test-", dir="/tmp")  # as LocalPool's: 0700, root's
    try:
        base = os.path.join(pool, "slot0", "triton-base", "KEY")
        os.makedirs(base)
        Path(base, "mod.so").write_text("judge-built")
        os.chmod(Path(base, "mod.so"), 0o644)
        assert isolation._under_hidden(pool, isolation.hidden_roots())
        iso = isolation.detect()
        uid = isolation.SANDBOX_UID_BASE
        code = (f"import os; os.setgroups([]); os.setresgid({uid}, {uid}, {uid}); os.setresuid({uid}, {uid}, {uid}); "
                f"print(open({os.path.join(base, 'mod.so')!r}).read())")
        out = subprocess.run(isolation.bwrap_argv(iso, binds_ro=[os.path.dirname(base)]) + [sys.executable, "-c", code],
                             capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(pool, ignore_errors=True)
    assert out.returncode == 0 and out.stdout.strip() == "judge-built", out.stderr[-800:]


def test_the_exec_guard_is_on_by_default_for_cpu_and_cuda_slots(monkeypatch):
    """CUDA slots took the guard by default once a GPU run showed them working under it (every shipped level 1-2
    solution `ok`, the native-code attacks refused; docs/measurements/evaluator-isolation.md); before, a CUDA
    candidate could run native code it built itself. Only an explicit DRK_EXEC_GUARD=off turns it off."""
    from drk.gym.sandbox import isolation

    monkeypatch.delenv("DRK_EXEC_GUARD", raising=False)
    assert isolation.exec_guard_wanted("cpu") and isolation.exec_guard_wanted("cuda")
    assert isolation.exec_guard_wanted("cuda:1")
    monkeypatch.setenv("DRK_EXEC_GUARD", "auto")
    assert isolation.exec_guard_wanted("cuda:0")
    monkeypatch.setenv("DRK_EXEC_GUARD", "off")
    assert not isolation.exec_guard_wanted("cuda") and not isolation.exec_guard_wanted("cpu")
