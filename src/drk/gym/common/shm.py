"""Tensors between the judge and a candidate process through one sealed memory file.

The judge writes the inputs (a device-to-host copy straight into the mapping) and leaves a slot for each
expected output, filled with 0xFF bytes (NaN for floats), in a memfd whose size is sealed, then passes its
descriptor to the candidate process (SCM_RIGHTS). The candidate process copies the inputs to its device
and writes each output into its slot only when shape and dtype are the expected ones. No shared device
memory (no CUDA IPC) and no pickling of large data; the candidate cannot resize the file (the seals), so
the judge's mapping stays valid whatever it does. One path on every device (inputs reach gigabytes on CUDA).

The judge keeps its file from forward to forward and from candidate to candidate, poisoned in between
(fresh pages cost the kernel's zeroing: seconds per gigabyte). On CUDA each side page-locks its mapping
(cudaHostRegister) so the copy engines move the bytes straight into and out of it; pageable memory goes
through the driver's staging buffers at a fraction of the speed. Where the driver refuses, the copies take
the staging path: the same bytes, only slower.
"""
from __future__ import annotations

import fcntl
import mmap
import os

import torch

from drk.gym.common.tensors import DTYPES, dtype_name

ALIGN = 256


def _spec(t: torch.Tensor) -> dict:
    return {"dtype": dtype_name(t.dtype), "shape": list(t.shape), "nbytes": t.numel() * t.element_size()}


def _pin(mm: mmap.mmap) -> int:
    """Page-lock the whole mapping for the GPU's copy engines; the address to unpin, or 0 if not pinned."""
    if not torch.cuda.is_available() or len(mm) == 0:
        return 0
    ptr = torch.frombuffer(mm, dtype=torch.uint8, count=1).data_ptr()  # the view ends here; the mapping stays
    if int(torch.cuda.cudart().cudaHostRegister(ptr, len(mm), 0)) != 0:
        torch.cuda.synchronize()  # clears nothing sticky: a failed registration is not a context error
        return 0
    return ptr


def _unpin(ptr: int) -> None:
    if ptr:
        torch.cuda.cudart().cudaHostUnregister(ptr)


def _fill_ff(view: torch.Tensor, device: torch.device | None) -> None:
    """0xFF into every byte of `view` (host), from a small device buffer when the mapping is pinned (a
    copy-engine write; a host memset of gigabytes costs seconds)."""
    n = view.numel()
    if device is None:
        view.fill_(255)
        return
    chunk = torch.full((min(n, 64 << 20),), 255, dtype=torch.uint8, device=device)
    for off in range(0, n, chunk.numel()):
        m = min(chunk.numel(), n - off)
        view[off:off + m].copy_(chunk[:m])


def _view(mm: mmap.mmap, spec: dict) -> torch.Tensor:
    dt = DTYPES[spec["dtype"]]
    if spec["nbytes"] == 0:
        return torch.empty(spec["shape"], dtype=dt)
    raw = torch.frombuffer(mm, dtype=torch.uint8, count=spec["nbytes"], offset=spec["offset"])
    return raw.view(dt).reshape(spec["shape"])


class HostMemoryError(RuntimeError):
    """The host cannot hold a forward's inputs and outputs: the infrastructure's failure, not the candidate's."""


class Exchange:
    """The judge's side: one sealed memfd holding a forward's inputs and output slots, kept by the judge
    and reused for every forward (`load` lays out the next one; a file too small, or more than twice too
    large, is replaced). Setting up fresh pages is the expensive part on a multi-gigabyte task (seconds).
    Between candidates `fresh()` poisons the whole file, so nothing one candidate process wrote into its
    mapping (anywhere: slots, padding, the unused tail) can reach the next; within one evaluation each
    `load` overwrites the inputs, and poisons the output slots again when the slots moved."""

    SLACK = 64 << 20  # a file up to 2x + this much larger than a forward needs is kept

    def __init__(self) -> None:
        self.fd, self.mm, self.size, self.pinned = -1, None, 0, 0
        self.serial = 0  # which file this is (a candidate process is sent each file once)
        self.device: torch.device | None = None  # where the poison fill comes from (pinned files)
        self.input_specs: list[dict] = []
        self.output_specs: list[dict] = []
        self._last_layout: tuple | None = None  # (file, every slot's place) of the last load

    def fresh(self) -> None:
        """Before the next candidate: every byte of the file poisoned (0xFF)."""
        if self.mm is not None:
            self._poison(0, self.size)
        self._last_layout = None

    def _poison(self, offset: int, nbytes: int) -> None:
        _fill_ff(torch.frombuffer(self.mm, dtype=torch.uint8, count=nbytes, offset=offset),
                 self.device if self.pinned else None)

    @staticmethod
    def _layout(inputs: list, expected: list[torch.Tensor]) -> tuple[list[dict], int, int]:
        """Each tensor's spec at its offset in the file, how many are inputs, and the file size needed."""
        specs, off = [], 0
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        for t in tensors + list(expected):
            s = _spec(t)
            s["offset"] = off
            off += (s["nbytes"] + ALIGN - 1) // ALIGN * ALIGN
            specs.append(s)
        return specs, len(tensors), max(off, ALIGN)

    @classmethod
    def layout_bytes(cls, inputs: list, expected: list[torch.Tensor]) -> int:
        """The file size `load` needs for this forward."""
        return cls._layout(inputs, expected)[2]

    def _fits(self, need: int, cuda: bool) -> bool:
        return self.mm is not None and need <= self.size <= 2 * need + self.SLACK and (self.pinned or not cuda)

    def reserve(self, need: int, device: torch.device | None = None) -> None:
        """Before a candidate's code is loaded: a file that every forward of its evaluation fits (`need`
        from `layout_bytes`), so the candidate process is sent the file before its code exists and never
        again (see `Mapped`)."""
        cuda = device is not None and device.type == "cuda"
        if not self._fits(need, cuda):
            self._new_file(need, pin=cuda)
            self.device = device if cuda else None

    def load(self, inputs: list, expected: list[torch.Tensor]) -> "Exchange":
        specs, n_in, need = self._layout(inputs, expected)
        self.input_specs, self.output_specs = specs[:n_in], specs[n_in:]
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        cuda = [t.device for t in tensors + list(expected) if t.device.type == "cuda"]
        if not self._fits(need, bool(cuda)):
            self._new_file(need, pin=bool(cuda))
            self.device = cuda[0] if cuda else None
        for s, t in zip(self.input_specs, tensors):
            if s["nbytes"]:
                _view(self.mm, s).copy_(t.detach())
        # The output slots are poisoned again only where this layout differs from the last forward's: then they
        # may hold bytes of the judge's own inputs. Otherwise they hold what this candidate's process wrote
        # there (it can write its mapping at any time, so a poison between its forwards would decide nothing),
        # or the poison of `fresh`; a copy-engine fill of every output per forward is what that saves.
        layout = (self.serial, [(s["offset"], s["nbytes"]) for s in specs])
        if layout != self._last_layout:
            for s in self.output_specs:
                if s["nbytes"]:
                    self._poison(s["offset"], s["nbytes"])
        self._last_layout = layout
        return self

    def _new_file(self, size: int, pin: bool) -> None:
        # Whole pages: the bytes of a file's last page past its end are mapped too, shared by every process
        # that maps the file, and no poisoning of the file reaches them (attack m01 left the next candidate a
        # message there)
        size = -(-size // mmap.PAGESIZE) * mmap.PAGESIZE
        self.close()
        fd = os.memfd_create("drk-exchange", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.fchmod(fd, 0o600)  # a candidate of another uid cannot reopen it from a descriptor it glimpsed
        try:
            os.ftruncate(fd, size)
            # Allocated now, in the kernel (several times faster than faulting each page in on first touch),
            # so a host short of memory is an error here instead of a SIGBUS in the middle of a copy.
            os.posix_fallocate(fd, 0, size)
        except OSError as e:
            os.close(fd)
            raise HostMemoryError(f"the evaluator's host could not hold the {size / 2**30:.1f} GB memory file of "
                                  f"this task's inputs and outputs ({e.strerror or e})") from None
        self.fd, self.size = fd, size
        self.serial += 1
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self.mm = mmap.mmap(self.fd, self.size)
        self.pinned = _pin(self.mm) if pin else 0

    def header(self) -> dict:
        return {"inputs_shm": self.input_specs, "outputs_shm": self.output_specs, "shm_size": self.size}

    def output(self, i: int, device: str) -> torch.Tensor:
        """Output slot i, copied to `device` (the judge compares there)."""
        return _view(self.mm, self.output_specs[i]).to(device, copy=True)

    def close(self) -> None:
        if self.mm is not None:
            _close(self.mm, self.pinned)
            os.close(self.fd)
        self.fd, self.mm, self.size, self.pinned = -1, None, 0, 0


def _close(mm: mmap.mmap, pinned: int) -> None:
    _unpin(pinned)  # before the unmap: the driver must not keep pages of a mapping that is gone
    try:
        mm.close()
    except BufferError:  # a view is still alive; the mapping goes with it
        pass


def _map_without_descriptor(fd: int, size: int, file: tuple[int, int], keep: frozenset = frozenset()) -> mmap.mmap:
    """A shared read-write mapping of `fd` that leaves no descriptor of the file open in this process (`fd`
    is closed). Rule: the exchange file lives on the kernel's own shared-memory mount, where no noexec
    reaches, so any descriptor of it lets candidate code map the bytes it wrote there executable (attacks
    k03, k17). `mmap.mmap` keeps a duplicate of the descriptor for the mapping's life unless told not to
    (`trackfd`, Python 3.13 on); before that the duplicate is pointed at /dev/null, which its close then
    closes instead, and so is any other descriptor of the file but those in `keep` (the judge's own, where
    a test holds both sides in one process)."""
    try:
        mm = mmap.mmap(fd, size, trackfd=False)
        os.close(fd)
        return mm
    except TypeError:  # Python < 3.13
        pass
    mm = mmap.mmap(fd, size)
    os.close(fd)
    null = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    try:
        for name in os.listdir("/proc/self/fd"):  # every descriptor of the file now open, whoever made it
            try:
                st = os.fstat(int(name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == file and int(name) not in keep:
                os.dup2(null, int(name))
    finally:
        os.close(null)
    return mm


class Mapped:
    """The candidate process's side of an Exchange: mapped once per file (`Mapped.open` reuses the mapping
    when the judge sends the same file again), pinned on CUDA."""

    def __init__(self, fd: int, header: dict, pin: bool = False, keep: frozenset = frozenset()) -> None:
        st = os.fstat(fd)
        size = int(header["shm_size"])
        if st.st_size != size:
            raise ValueError("exchange file has the wrong size")
        self.file = (st.st_dev, st.st_ino)
        self.mm = _map_without_descriptor(fd, size, self.file, keep)
        self.inputs, self.outputs = header["inputs_shm"], header["outputs_shm"]
        self.pinned = _pin(self.mm) if pin else 0

    @classmethod
    def open(cls, held: "Mapped | None", fd: int | None, header: dict, pin: bool = False,
             keep: frozenset = frozenset()) -> "Mapped":
        """The mapping of the file behind `fd` for this forward's `header`: `held` when it maps that same
        file (the descriptor is closed), else a new one (`held` is closed). Without `fd` (the judge sends a
        file once, before the candidate's code is loaded) `held` must map a file of the header's size."""
        if fd is None:
            if held is None or len(held.mm) != int(header["shm_size"]):
                raise ValueError("no exchange file of this size was sent")
            held.inputs, held.outputs = header["inputs_shm"], header["outputs_shm"]
            return held
        st = os.fstat(fd)
        if held is not None and held.file == (st.st_dev, st.st_ino) and len(held.mm) == st.st_size \
                and st.st_size == int(header["shm_size"]):
            os.close(fd)
            held.inputs, held.outputs = header["inputs_shm"], header["outputs_shm"]
            return held
        if held is not None:
            held.close()
        return cls(fd, header, pin, keep)

    def close(self) -> None:
        _close(self.mm, self.pinned)
        self.pinned = 0

    def input_tensors(self, device: str) -> list[torch.Tensor]:
        return [_view(self.mm, s).to(device, copy=True) for s in self.inputs]

    def write_output(self, i: int, t: torch.Tensor) -> bool:
        return self._write(self.mm, self.outputs, i, t)

    @staticmethod
    def _write(mm: mmap.mmap, specs: list, i: int, t: torch.Tensor) -> bool:
        if i >= len(specs):
            return False
        s = specs[i]
        if list(t.shape) != s["shape"] or dtype_name(t.dtype) != s["dtype"]:
            return False
        if s["nbytes"]:
            _view(mm, s).copy_(t.detach())
        return True
