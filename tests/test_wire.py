"""The judge's channel to a candidate process (`drk.gym.common.wire`): what a dead peer and a malformed
message each read as, since the judge names the candidate's failure from it (crashed: died vs protocol)."""
from __future__ import annotations

import os

import pytest

from drk.gym.common import wire


class _Conn:
    def __init__(self, error: OSError) -> None:
        self.error = error

    def poll(self, timeout=None) -> bool:
        return True

    def recv_bytes(self, maxlength=None) -> bytes:
        raise self.error


@pytest.mark.parametrize("error", [ConnectionResetError(104, "Connection reset by peer"), BrokenPipeError(32, "pipe")])
def test_a_peer_killed_mid_message_reads_as_gone_not_as_a_protocol_violation(error):
    with pytest.raises(EOFError):
        wire.recv(_Conn(error), timeout=1.0)


def test_an_oversize_header_is_a_protocol_violation():
    with pytest.raises(wire.ProtocolError, match="bad message"):
        wire.recv(_Conn(OSError("bad message length")), timeout=1.0)


def test_a_message_begun_and_stalled_ends_at_the_deadline():
    """A peer that runs untrusted code can begin a message and stall mid-way (attack m13): with a deadline,
    every read of the message ends by it, not only the wait for its start."""
    import struct
    import time

    conn, fd = wire.socket_pair()
    peer = wire.connection_from_fd(fd)
    wire.send(peer, {"op": "x", "n": 1}, [b"abc", b""])
    header, frames = wire.recv(conn, deadline=time.monotonic() + 5)
    assert header["op"] == "x" and header["nframes"] == 2 and [bytes(f) for f in frames] == [b"abc", b""]
    os.write(fd, struct.pack("!i", 100) + b"{")  # a header's length and its first byte, then nothing
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        wire.recv(conn, deadline=t0 + 0.5)
    assert time.monotonic() - t0 < 2.0
    os.write(fd, struct.pack("!i", 2**31 - 1))
    with pytest.raises(wire.ProtocolError):  # longer than any header may be
        wire.recv(conn, deadline=time.monotonic() + 1)
    peer.close()
    with pytest.raises(EOFError):
        wire.recv(conn, deadline=time.monotonic() + 1)


def test_frames_are_bounded_together():
    """One frame within the per-frame bound sent thousands of times is as much memory (attack m11)."""
    import time

    conn, fd = wire.socket_pair()
    peer = wire.connection_from_fd(fd)
    wire.send(peer, {"op": "x"}, [b"a" * 1000] * 3)
    h, frames = wire.recv(conn, max_frame=1000, max_total=3000, deadline=time.monotonic() + 5)
    assert len(frames) == 3
    wire.send(peer, {"op": "x"}, [b"a" * 1000] * 4)
    with pytest.raises(wire.ProtocolError):
        wire.recv(conn, max_frame=1000, max_total=3000, deadline=time.monotonic() + 5)
