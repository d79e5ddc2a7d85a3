"""Triton's per-signature launchers, built by the judge for candidates that may not build or load their own.

Rule: under the exec guard (`drk.gym.sandbox.zygote.guard_exec`) nothing a candidate writes can be mapped
executable, yet Triton on CUDA compiles a small C module per kernel signature (`make_launcher` ->
`compile_module_from_src`, which runs the C compiler and loads the result from the candidate's own cache).
So the candidate process's Triton asks the judge instead: the request carries the kernel's signature (a
list of type names) and which tensor descriptors have metadata, never C source. The judge checks every type
against the closed set Triton's launcher generator knows, generates the source itself with Triton's own
`make_launcher`, compiles it outside the sandbox and puts the module in the slot's launcher folder, which the
sandbox shows read-only (and executable, being read-only). A candidate can therefore only ever load a
launcher the judge generated from a signature, whatever it sends.

The candidate side (`drk.gym.sandbox.launchers`) looks modules up by Triton's own cache key (the hash of
the source and the platform), so a launcher built once serves every later candidate of the slot.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import threading

from drk.gym.common.modules import LAUNCHER, cache_key, module_file

MAX_ARGS = 512           # a kernel with more arguments than this is no kernel
MAX_DEPTH = 4            # tuple arguments nest; deeper is no signature Triton makes
MAX_BUILDS = 64          # per candidate process: each costs the judge a compiler run
MAX_REQUEST = 65536
# A type name as Triton writes one (i32, fp32, *fp16, *kbf16, constexpr, nvTmaDesc, tensordesc<fp16[64, 64]>):
# Triton's launcher generator only looks names up in its tables and counts a descriptor's dimensions, and a
# name it does not know fails there; these characters cannot form C (no quote, semicolon, parenthesis,
# brace, slash, hash or line break) even if a later generator pasted a name into its source.
TYPE_NAME = re.compile(r"[A-Za-z0-9_*<>\[\], .]{1,256}")


class BadSignature(ValueError):
    """A request that is not a kernel signature Triton's launcher generator accepts."""


def _type(t, depth: int = 0):
    if isinstance(t, list):
        if depth >= MAX_DEPTH or len(t) > MAX_ARGS:
            raise BadSignature("tuple argument nested too deep or too long")
        return tuple(_type(x, depth + 1) for x in t)
    if not isinstance(t, str):
        raise BadSignature(f"type {t!r} is not a name")
    if TYPE_NAME.fullmatch(t):
        return t
    raise BadSignature(f"type {t[:40]!r} is not a type name")


def parse(req: dict) -> tuple[dict, list | None]:
    """(signature, tensordesc_meta) for `make_launcher` from a request, or BadSignature."""
    sig, descs = req.get("signature"), req.get("tensordesc")
    if not isinstance(sig, list) or len(sig) > MAX_ARGS:
        raise BadSignature("the signature must be a list of at most %d types" % MAX_ARGS)
    signature = {i: _type(t) for i, t in enumerate(sig)}
    if descs is None:
        return signature, None
    if not isinstance(descs, list) or len(descs) > MAX_ARGS or not all(isinstance(d, bool) for d in descs):
        raise BadSignature("tensordesc must be a list of booleans")
    n = sum(1 for t in signature.values() if isinstance(t, str) and t.startswith("tensordesc"))
    if descs and len(descs) != n:
        raise BadSignature("tensordesc does not match the signature's tensor descriptors")
    return signature, [{} if d else None for d in descs]  # the generator asks only whether each has metadata


def source(signature: dict, tensordesc_meta: list | None) -> str:
    from triton.backends.nvidia import driver

    return driver.make_launcher({}, signature, tensordesc_meta)  # constants never reach the source


class LauncherBuilder:
    """Builds launchers into `folder` (`folder/<key>/__triton_launcher<ext>`, Triton's cache layout) for the
    candidates of one slot; `serve` answers one candidate process on its own channel, on a thread."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        os.makedirs(folder, mode=0o755, exist_ok=True)
        self.lock = threading.Lock()

    def path(self, key: str) -> str:
        return os.path.join(self.folder, key, module_file(LAUNCHER))

    def build(self, req: dict) -> dict:
        try:
            signature, meta = parse(req)
            src = source(signature, meta)
        except (BadSignature, KeyError, ValueError, TypeError, AttributeError, AssertionError) as e:
            return {"ok": False, "error": f"not a kernel signature: {str(e)[:200]}"}
        key = cache_key(src)
        with self.lock:
            if not os.path.exists(self.path(key)):
                try:
                    self._compile(key, src)
                except Exception as e:  # noqa: BLE001  (the judge's tool chain: an infrastructure failure)
                    return {"ok": False, "infra": True, "error": f"the judge could not build a launcher: {e}"[:400]}
        return {"ok": True, "key": key}

    def _compile(self, key: str, src: str) -> None:
        from triton.backends.nvidia import driver
        from triton.runtime.build import _build

        tmp = tempfile.mkdtemp(prefix=".build-", dir=self.folder)
        try:
            c = os.path.join(tmp, LAUNCHER + ".c")
            with open(c, "w") as f:
                f.write(src)
            so = _build(LAUNCHER, c, tmp, driver.library_dirs(), driver.include_dirs, driver.libraries, [])
            os.makedirs(os.path.dirname(self.path(key)), mode=0o755, exist_ok=True)
            os.chmod(so, 0o644)
            os.replace(so, self.path(key))  # whole or absent: a candidate never sees half a module
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def serve(self, sock: socket.socket) -> "Channel":
        """Answer one candidate process's requests on `sock` until it closes, on a thread."""
        ch = Channel()

        def loop() -> None:
            import json

            builds = 0
            try:
                while True:
                    data = sock.recv(MAX_REQUEST)
                    if not data:
                        return
                    try:
                        req = json.loads(data)
                        if not isinstance(req, dict):
                            raise ValueError
                    except ValueError:
                        reply = {"ok": False, "error": "not a launcher request"}
                    else:
                        builds += 1
                        reply = self.build(req) if builds <= MAX_BUILDS else {
                            "ok": False, "error": f"more than {MAX_BUILDS} launcher builds in one evaluation"}
                        if reply.pop("infra", False):
                            ch.infra_error = reply["error"]
                    sock.send(json.dumps(reply).encode())
            except OSError:
                return
            finally:
                sock.close()

        ch.thread = threading.Thread(target=loop, name="drk-launchers", daemon=True)
        ch.thread.start()
        return ch


class Channel:
    """One candidate process's channel to the builder: `infra_error` says the judge's own tool chain failed
    on one of its launchers, so a failing verdict of that evaluation is the infrastructure's, not the
    candidate's."""

    def __init__(self) -> None:
        self.infra_error = ""
        self.thread: threading.Thread | None = None
