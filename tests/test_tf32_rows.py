"""Attack m12 on the GPU: TF32 switched on inside the forward and off again before it returns, so the settings
compared after each call look pinned. The profiled forward's rows still name the matmul kernels cuBLAS chose;
`tf32_matmul` finds a float32 matmul on TF32 tensor cores among them. Kernel names as an H100 gave them
(CUDA 13, torch 2.11: `bench/tf32_kernel_names.py`)."""
from __future__ import annotations

from drk.gym.common import harness
from drk.gym.judge.checks import tf32_matmul

TF32 = ["sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x256x32_warpgroupsize2x1x1_execute_segment_k_off_kernel"
        "__5x_cublas", "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>(cutlass_80_tensorop_"
        "s1688gemm_64x64_16x6_nn_align4::Params)"]
FP32 = ["sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_"
        "kernel__5x_cublas", "void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>(cutlass_80_simt_sgemm_"
        "64x64_8x5_nn_align1::Params)", "Memset (Device)"]
CONV_TF32 = "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x64x32_stage5_warpsize2x2x1_" \
            "g1_tensor16x8x8_execute_kernel__5x_cudnn"
HALF = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)"


def rows(*names: str, calls: int = 1) -> list[dict]:
    return [{"name": n, "ms": 0.1, "calls": calls} for n in names]


def test_a_matmul_on_tf32_tensor_cores_is_found_among_the_forwards_kernels():
    for name in TF32:
        assert tf32_matmul(rows(*FP32, name, "gelu_kernel"), {"gelu_kernel"}, {"gelu_kernel": 1}) == name


def test_float32_matmuls_convolutions_at_the_pinned_tf32_and_half_precision_are_not():
    assert tf32_matmul(rows(*FP32, CONV_TF32, HALF, "gelu_kernel"), {"gelu_kernel"}, {"gelu_kernel": 1}) is None


def test_the_sources_own_triton_kernel_chooses_its_precision_but_a_name_borrowed_from_cublas_hides_nothing():
    own = "gemm_tf32_kernel"  # a Triton GEMM of the source's, tl.dot at TF32 (Triton's default)
    assert tf32_matmul(rows(own, calls=2), {own}, {own: 2}) is None
    # a Triton function named after the cuBLAS kernel, launched once: cuBLAS's other executions still count
    assert tf32_matmul(rows(TF32[0], calls=3), {TF32[0]}, {TF32[0]: 1}) == TF32[0]
    assert tf32_matmul(rows(TF32[0]), {TF32[0]}, None) == TF32[0]  # declared, never launched


def test_nothing_is_found_when_matmuls_are_pinned_to_tf32(monkeypatch):
    monkeypatch.setitem(harness.NUMERICS, "matmul_tf32", True)
    assert tf32_matmul(rows(TF32[0]), set(), {}) is None
