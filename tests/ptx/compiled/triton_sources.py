"""The committed Triton matmul PTX files: types, masks, tiles, targets, launch geometry (data only)."""

# a: A and B element type; acc: the accumulator; out: C's element type; masked: bounds masks
# (then M, N, K need not be tile multiples); arch: compute capability the PTX targets.
#: the columns of each row below (after the file name)
FIELDS = ("a", "acc", "out", "masked", "arch", "bm", "bn", "bk", "warps", "stages", "mnk", "shared")
KERNELS = {name: dict(zip(FIELDS, row)) for name, *row in [
    ("triton_f16_f32acc_masked_sm90", "f16", "f32", "f32", True, 90, 64, 32, 32, 4, 2, (80, 48, 96), 8192),
    ("triton_f16_f16acc_sm90", "f16", "f16", "f16", False, 90, 64, 32, 32, 4, 2, (64, 64, 64), 6144),
    ("triton_bf16_f32acc_masked_sm80", "bf16", "f32", "f32", True, 80, 32, 32, 32, 4, 2, (48, 40, 72), 4096),
    ("triton_tf32_masked_sm89", "f32", "f32", "f32", True, 89, 32, 32, 16, 4, 2, (40, 32, 48), 4096),
    ("triton_e4m3_f32acc_sm89", "e4m3", "f32", "f32", False, 89, 32, 32, 32, 4, 2, (32, 32, 64), 4096),
    ("triton_s8_s32acc_masked_sm80", "s8", "s32", "s32", True, 80, 32, 32, 32, 4, 2, (40, 48, 96), 4096),
]}
