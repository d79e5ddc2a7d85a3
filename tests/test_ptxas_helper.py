"""The ptxas helper (drk.gym.sandbox.ptxas): a CUDA candidate process under the exec guard may start no
program, yet Triton runs ptxas per kernel; the helper made before the filter runs ptxas for it and nothing
else. Triton's real ptxas needs a GPU build, so here a stand-in binary plays it: a shell script that copies
the PTX to the cubin, logs to stderr, fails on a marker, and answers --version as ptxas does."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from drk.gym.sandbox import ptxas

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_flags_are_ptxas_switches_and_never_files():
    ok = ["-lineinfo", "-suppress-debug-info", "-g", "--fmad=false", "-v", "--opt-level", "0", "--gpu-name=sm_90a",
          "-maxrregcount=128", "--def-load-cache=ca"]
    assert ptxas.flags_of(ok) == ok
    for bad in (["-o", "x"], ["--output-file=x"], ["--options-file=opts"], ["-optf"], ["/etc/passwd"], ["../x.ptx"],
                ["a b"], [""], [3], ["-v"] * 65, "-v", ["--input-as-string=.version 8.0"]):
        with pytest.raises(ptxas.BadRequest):
            ptxas.flags_of(bad)


FAKE_PTXAS = """#!/bin/sh
# stands in for ptxas: --version, else [flags...] SRC -o OUT
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 12.8, V12.8.93"; exit 0; fi
for a in "$@"; do prev2="$prev"; prev="$a"; done
out="$prev"; eval "src=\\${$(($# - 2))}"
echo "ptxas info    : flags $*" >&2
if grep -q FAIL "$src"; then echo "ptxas fatal   : marker in the PTX" >&2; exit 255; fi
cp "$src" "$out"
"""

SCRIPT = r'''
import json, os, subprocess, sys, tempfile
from drk.gym.sandbox import ptxas, seccomp
tool = os.path.realpath(sys.argv[1])
out = {}
fd = ptxas.start_helper([tool], lambda: seccomp.install(exec_guard=True))
# from here this process is a guarded candidate's: no new programs, no new processes
assert seccomp.install(exec_guard=True, no_processes=True)
try:
    subprocess.run(["/bin/true"])
    out["own_exec"] = "allowed"
except PermissionError:
    out["own_exec"] = "refused"
violations = []
proxy = ptxas.HelperSubprocess(fd, [tool], violations)
work = tempfile.mkdtemp()
src, dst, log = (os.path.join(work, n) for n in ("k.ptx", "k.ptx.o", "k.log"))
with open(src, "w") as f:
    f.write(".version 8.0\n.target sm_90a\n// a kernel\n")
with open(log, "w+") as flog:  # the way Triton's make_cubin calls it
    proxy.run([tool, "-lineinfo", "-v", "--gpu-name=sm_90a", src, "-o", dst], check=True, close_fds=False, stderr=flog)
out["cubin"] = open(dst).read()
out["log"] = open(log).read()
out["version"] = proxy.check_output([tool, "--version"], stderr=subprocess.STDOUT).decode()
with open(src, "w") as f:
    f.write("FAIL\n")
try:
    proxy.run([tool, "-v", src, "-o", dst + "2"], check=True, stderr=subprocess.PIPE)
except subprocess.CalledProcessError as e:
    out["failed"] = [e.returncode, e.stderr.decode()]
for name, cmd in (("other_program", ["/bin/sh", "-c", "echo hi"]), ("file_flag", [tool, "-o", "/x", src, "-o", dst])):
    try:
        proxy.run(cmd, check=True)
        out[name] = "ran"
    except (PermissionError, OSError) as e:
        out[name] = "refused: " + str(e)[:120]
# candidate code speaking to the helper directly gets no more than ptxas
from drk.gym.common import wire
wire.send(proxy._conn, {"op": "run", "tool": 1, "flags": []}, [b""])
out["raw_tool"] = wire.recv(proxy._conn, timeout=30)[0]
wire.send(proxy._conn, {"op": "exec", "argv": ["/bin/sh"]}, [])
out["raw_exec"] = wire.recv(proxy._conn, timeout=30)[0]
out["violations"] = violations
print(json.dumps(out))
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="seccomp is Linux's")
def test_a_candidate_that_may_start_no_program_gets_ptxas_through_the_helper_and_nothing_else(tmp_path):
    tool = tmp_path / "ptxas"
    tool.write_text(FAKE_PTXAS)
    tool.chmod(0o755)
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(tool)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")})
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["own_exec"] == "refused"  # the filter is on: without the helper no ptxas could run
    assert out["cubin"].startswith(".version 8.0")  # the helper's ptxas wrote it, the proxy put it where asked
    assert "flags -lineinfo -v --gpu-name=sm_90a" in out["log"]
    assert "release 12.8" in out["version"]
    assert out["failed"][0] == 255 and "marker in the PTX" in out["failed"][1]
    assert out["other_program"].startswith("refused: sandbox: starting programs is not allowed")
    assert out["file_flag"].startswith("refused") and "is not one the helper passes" in out["file_flag"]
    assert out["raw_tool"] == {"ok": False, "error": "no such tool", "nframes": 0}
    assert out["raw_exec"]["ok"] is False
    assert any("/bin/sh" in v for v in out["violations"])


def test_the_helper_is_the_only_route_and_filters_itself(tmp_path):
    """The helper runs under the candidate's filter less the process rules: no executable memory for it
    either (its ptxas is a program loaded from a read-only file, which the rules leave alone)."""
    code = textwrap.dedent(r'''
        import ctypes, os, sys
        from drk.gym.sandbox import ptxas, seccomp
        from drk.gym.common import wire
        def check():
            seccomp.install(exec_guard=True)
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_long]
            p = libc.mmap(None, 4096, 7, 0x22, -1, 0)
            os.write(2, b"rwx=" + (b"refused" if p in (None, ctypes.c_void_p(-1).value) else b"allowed") + b"\n")
        fd = ptxas.start_helper([os.path.realpath(sys.argv[1])], check)
        conn = wire.connection_from_fd(fd)
        wire.send(conn, {"op": "version", "tool": 0}, [])
        print(wire.recv(conn, timeout=30)[1][0].decode().strip())
    ''')
    tool = tmp_path / "ptxas"
    tool.write_text(FAKE_PTXAS)
    tool.chmod(0o755)
    p = subprocess.run([sys.executable, "-c", code, str(tool)], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")})
    assert p.returncode == 0, p.stderr[-2000:]
    assert "rwx=refused" in p.stderr and "release 12.8" in p.stdout
