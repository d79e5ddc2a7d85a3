"""The judge's channel to a candidate process (`drk.gym.common.wire`): what a dead peer and a malformed
message each read as, since the judge names the candidate's failure from it (crashed: died vs protocol)."""
from __future__ import annotations

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
