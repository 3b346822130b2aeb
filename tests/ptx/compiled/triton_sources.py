"""The committed Triton matmul PTX files: types, masks, tiles, targets, launch geometry (data only)."""

# a: A and B element type; acc: the accumulator; out: C's element type; masked: bounds masks
# (then M, N, K need not be tile multiples); arch: compute capability the PTX targets.
KERNELS = {
    "triton_f16_f32acc_masked_sm90": dict(a="f16", acc="f32", out="f32", masked=True, arch=90, bm=64, bn=32, bk=32,
                                          warps=4, stages=2, mnk=(80, 48, 96), shared=8192),
    "triton_f16_f16acc_sm90": dict(a="f16", acc="f16", out="f16", masked=False, arch=90, bm=64, bn=32, bk=32,
                                   warps=4, stages=2, mnk=(64, 64, 64), shared=6144),
    "triton_bf16_f32acc_masked_sm80": dict(a="bf16", acc="f32", out="f32", masked=True, arch=80, bm=32, bn=32, bk=32,
                                           warps=4, stages=2, mnk=(48, 40, 72), shared=4096),
    "triton_tf32_masked_sm89": dict(a="f32", acc="f32", out="f32", masked=True, arch=89, bm=32, bn=32, bk=16,
                                    warps=4, stages=2, mnk=(40, 32, 48), shared=4096),
    "triton_e4m3_f32acc_sm89": dict(a="e4m3", acc="f32", out="f32", masked=False, arch=89, bm=32, bn=32, bk=32,
                                    warps=4, stages=2, mnk=(32, 32, 64), shared=4096),
    "triton_s8_s32acc_masked_sm80": dict(a="s8", acc="s32", out="s32", masked=True, arch=80, bm=32, bn=32, bk=32,
                                         warps=4, stages=2, mnk=(40, 48, 96), shared=4096),
}
