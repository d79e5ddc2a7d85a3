"""Messages between the evaluator's processes.

A message is one JSON header followed by `nframes` raw byte frames, over a
`multiprocessing.connection.Connection` wrapped around one end of a socketpair.

Direction matters. The candidate runner executes untrusted code, so anything it sends is parsed as JSON
and raw numbers only: unpickling its bytes would hand it code execution in a trusted process. Trusted
senders (parent, judge) may also ship pickled frames to the runner (how CUDA tensors travel as IPC
handles); the runner unpickles only what trusted processes sent.
"""
from __future__ import annotations

import json
import os
import select
import socket
import struct
import time
from multiprocessing.connection import Connection
from typing import Any

MAX_HEADER = 64 * 1024 * 1024  # a header larger than this from the runner is a protocol violation


class ProtocolError(RuntimeError):
    """The peer sent something that is not a well-formed message (or died mid-message)."""


def socket_pair() -> tuple[Connection, int]:
    """A connected pair: our Connection and the raw fd to pass to the child (close it after spawning)."""
    a, b = socket.socketpair()
    conn = Connection(a.detach())
    return conn, b.detach()


def connection_from_fd(fd: int) -> Connection:
    return Connection(fd)


def send(conn: Connection, header: dict, frames: list[bytes | memoryview] = ()) -> None:
    header = dict(header, nframes=len(frames))
    conn.send_bytes(json.dumps(header, allow_nan=True).encode())
    for f in frames:
        conn.send_bytes(f)


def _read_exact(fd: int, n: int, end: float) -> bytearray:
    """`n` bytes from `fd`, or TimeoutError at monotonic time `end`, EOFError if the peer closes first."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    p = select.poll()
    p.register(fd, select.POLLIN)
    while got < n:
        left = end - time.monotonic()
        if left <= 0 or not p.poll(max(1, int(left * 1000))):
            raise TimeoutError
        try:
            k = os.readv(fd, [view[got:got + (1 << 24)]])
        except ConnectionError:
            raise EOFError("the peer's end of the channel is gone") from None
        if k == 0:
            raise EOFError("the peer's end of the channel is gone")
        got += k
    return buf


def _recv_bytes_by(conn: Connection, maxsize: int | None, end: float) -> bytearray:
    """One message of multiprocessing's framing (a signed 4-byte length, -1 then an 8-byte one for large
    messages), every read bounded by `end`."""
    fd = conn.fileno()
    size = struct.unpack("!i", _read_exact(fd, 4, end))[0]
    if size == -1:
        size = struct.unpack("!Q", _read_exact(fd, 8, end))[0]
    if size < 0 or (maxsize is not None and size > maxsize):
        raise ProtocolError(f"bad message length {size}")
    return _read_exact(fd, size, end)


def recv(conn: Connection, timeout: float | None = None, max_frame: int | None = None,
         deadline: float | None = None, max_total: int | None = None) -> tuple[dict, list[bytes]]:
    """Receive one message. Raises TimeoutError if nothing arrives in `timeout` seconds, EOFError if the
    peer closed or died (a connection reset mid-message is a death, never the peer's malformed data),
    ProtocolError on malformed data. With `deadline` (monotonic time) every read of the message, not only
    its start, ends by then: a peer that runs untrusted code can begin a message and stall mid-way (attack
    m13), and a plain read would wait for it forever; `max_total` then bounds the frames together (one
    frame within `max_frame` sent thousands of times is as much memory, attack m11)."""
    if deadline is not None:
        return _recv_by(conn, max_frame, deadline, max_total)
    if timeout is not None and not conn.poll(timeout):
        raise TimeoutError
    try:
        raw = conn.recv_bytes(MAX_HEADER)
    except ConnectionError:
        raise EOFError("the peer's end of the channel is gone") from None
    except OSError as e:  # "bad message length": oversize header
        raise ProtocolError(f"bad message: {e}") from None
    header = _parse_header(raw)
    frames = []
    for _ in range(header["nframes"]):
        if timeout is not None and not conn.poll(timeout):
            raise TimeoutError
        try:
            frames.append(conn.recv_bytes(max_frame) if max_frame else conn.recv_bytes())
        except ConnectionError:
            raise EOFError("the peer's end of the channel is gone") from None
    return header, frames


def _recv_by(conn: Connection, max_frame: int | None, end: float,
             max_total: int | None = None) -> tuple[dict, list[bytes]]:
    header = _parse_header(_recv_bytes_by(conn, MAX_HEADER, end))
    frames: list = []
    left = max_total
    for _ in range(header["nframes"]):
        cap = max_frame if left is None else (left if max_frame is None else min(max_frame, left))
        frames.append(_recv_bytes_by(conn, cap, end))
        if left is not None:
            left -= len(frames[-1])
    return header, frames


def _parse_header(raw) -> dict:
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ProtocolError("message header is not JSON") from None
    if not isinstance(header, dict):
        raise ProtocolError("message header is not an object")
    n = header.get("nframes", 0)
    if not isinstance(n, int) or n < 0 or n > 4096:
        raise ProtocolError("bad frame count")
    header["nframes"] = n
    return header


def close_quietly(*things: Any) -> None:
    for t in things:
        try:
            if isinstance(t, int):
                os.close(t)
            elif t is not None:
                t.close()
        except OSError:
            pass




def file_tail(path: str, n: int) -> str:
    """The last `n` bytes of a log file as text ("" when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - n))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def kill_group(proc) -> None:
    """SIGKILL a child started with start_new_session=True and everything in its process group; reap it."""
    import signal
    import subprocess

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def send_fds(conn: Connection, fds: list[int]) -> None:
    """Pass file descriptors after a message (one marker byte carrying them by SCM_RIGHTS); the peer reads
    them with `recv_fds` when the message's header says `nfds`."""
    sock = socket.fromfd(conn.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        socket.send_fds(sock, [b"F"], list(fds))
    finally:
        sock.close()


def recv_fds(conn: Connection, n: int, sock: socket.socket | None = None) -> list[int]:
    """`sock`: a socket object on the same connection made in advance (creating one later raises an audit
    event the candidate process's policy refuses)."""
    own = sock is None
    sock = sock or socket.fromfd(conn.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        data, fds, _flags, _addr = socket.recv_fds(sock, 1, n)
    finally:
        if own:
            sock.close()
    if data != b"F" or len(fds) != n:
        for fd in fds:
            os.close(fd)
        raise ProtocolError("bad descriptor message")
    return list(fds)
