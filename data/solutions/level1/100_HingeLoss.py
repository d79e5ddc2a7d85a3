"""Hinge loss mean(clamp(1 - predictions * targets, min=0)) as a two-stage deterministic Triton reduction.

predictions (R, D) and targets broadcast to it (for the KernelBench shapes targets is (D,), i.e. it is
broadcast along rows: stride 0 for rows, so it stays in L2). Stage 1: each program sums the hinge values
of a [BLOCK_R rows x up to 4*BLOCK_D columns] segment into one partial; stage 2: one program adds the
partials and divides by the element count. No atomics, so the result is deterministic.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hinge_partial_kernel(p_ptr, t_ptr, part_ptr, R, D, stride_pr, stride_tr, stride_tc, num_chunks,
                         BLOCKS_PER_PROG: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    # program (pid_r, pid_c): rows [pid_r*BLOCK_R, +BLOCK_R) x columns [pid_c*BLOCKS_PER_PROG*BLOCK_D, ...)
    pid_r = tl.program_id(0)
    pid_c = tl.program_id(1)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    mask_r = rows < R
    rows64 = rows.to(tl.int64)  # int64: R * D exceeds 2**31 at full size
    p_rows = p_ptr + rows64[:, None] * stride_pr
    t_rows = t_ptr + rows64[:, None] * stride_tr
    col0 = pid_c * (BLOCKS_PER_PROG * BLOCK_D)
    acc = tl.zeros([BLOCK_R, BLOCK_D], tl.float32)
    for b in range(0, BLOCKS_PER_PROG):
        cols = col0 + b * BLOCK_D + tl.arange(0, BLOCK_D)
        mask = mask_r[:, None] & (cols < D)[None, :]
        p = tl.load(p_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        t = tl.load(t_rows + cols[None, :].to(tl.int64) * stride_tc, mask=mask, other=0.0).to(tl.float32)
        h = tl.maximum(1.0 - p * t, 0.0)
        acc += tl.where(mask, h, 0.0)  # masked lanes would otherwise contribute clamp(1 - 0) = 1
    tl.store(part_ptr + pid_r * num_chunks + pid_c, tl.sum(tl.sum(acc, axis=1), axis=0))


@triton.jit
def hinge_finalize_kernel(part_ptr, out_ptr, inv_count, N_PARTS: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N_PARTS, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + offs, mask=offs < N_PARTS, other=0.0)
    total = tl.sum(acc, axis=0) * inv_count
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def triton_hinge_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    # bytes moved: numel(predictions) * 4 + numel(targets) * 4 (L2-resident) ; ~4 FLOPs/element
    assert predictions.is_floating_point() and targets.is_floating_point(), "expected float tensors"
    out_shape = torch.broadcast_shapes(predictions.shape, targets.shape)
    D = out_shape[-1] if len(out_shape) > 0 else 1
    total = 1
    for s in out_shape:
        total *= s
    out = torch.empty((), device=predictions.device, dtype=predictions.dtype)
    if total == 0:
        return out.fill_(float("nan"))  # mean of an empty tensor
    R = total // D
    if predictions.shape != out_shape:
        predictions = predictions.expand(out_shape)
    p2 = predictions.contiguous().view(R, D)
    # broadcasting targets: expand is a free stride-0 view; reshape stays a view for the usual cases
    t2 = targets.expand(out_shape).reshape(R, D)
    # ~8192-element tiles: one row x 8192 columns for long rows, several short rows otherwise
    BLOCK_D = min(triton.next_power_of_2(D), 8192)
    BLOCK_R = min(8192 // BLOCK_D, triton.next_power_of_2(R))
    n_blocks = triton.cdiv(D, BLOCK_D)
    blocks_per_prog = min(n_blocks, 4)
    num_chunks = triton.cdiv(n_blocks, blocks_per_prog)
    row_progs = triton.cdiv(R, BLOCK_R)
    n_parts = row_progs * num_chunks
    partials = torch.empty((n_parts,), device=predictions.device, dtype=torch.float32)
    hinge_partial_kernel[(row_progs, num_chunks)](p2, t2, partials, R, D, p2.stride(0), t2.stride(0),
                                                  t2.stride(1), num_chunks, BLOCKS_PER_PROG=blocks_per_prog,
                                                  BLOCK_R=BLOCK_R, BLOCK_D=BLOCK_D, num_warps=8)
    hinge_finalize_kernel[(1,)](partials, out, 1.0 / total, N_PARTS=n_parts, BLOCK=1024, num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions, targets):
        return triton_hinge_loss(predictions, targets)
