"""Every fast kernel equals the exact one, across the catalog and every modelled architecture.

The exact kernels (the generic per-element kernel of ``engine.kernel`` and the wgmma matrix kernel)
are the reference; the fast ones (float tensor-core, integer, host-FPU chain, block-scaled, wgmma)
must give the same words on uniformly random register words (every NaN payload, inf, subnormal and
extreme) and on ordinary values.  One opcode stands for each distinct (architecture, recipe, shape,
sparsity, element widths, scale vector); the golden corpora check the exact kernels against the GPU.
"""

import zlib

import numpy as np
import pytest

from warpsim.engine import kernel, tensorcore, warpgroup_mma
from warpsim.engine import wgmma as wgmma_engine
from warpsim.hw.inputs import distributions, generate
from warpsim.isa.catalog import BY_OPCODE
from warpsim.numerics import arch as arch_table
from warpsim.numerics.recipes import recipe_params

ARCHS = ("sm_75", "sm_80", "sm_89", "sm_90", "sm_100", "sm_120", "sm_120a")
WARPS = 8


def _representatives():
    seen = {}
    for arch in ARCHS:
        for op, ins in BY_OPCODE.items():
            if ins.iclass != "mma":      # warp-level mma / mma.sp only (wgmma below)
                continue
            try:
                pl = kernel.plan(op, 0, arch)
            except (NotImplementedError, ValueError, KeyError):
                continue
            fast = pl.ftab is not None or pl.itab is not None or pl.kind == kernel.DOT_CHAIN
            if not fast:
                continue
            key = (pl.params.tobytes(), ins.mnk, ins.is_sparse, tuple(t[3] for t in pl.tables),
                   ins.scale_vec, ins.stype, ins.atype == "tf32")
            seen.setdefault(key, (op, arch))
    return sorted(seen.values())


CASES = _representatives()


def _words(rng, ins, role, warps):
    return rng.integers(0, 1 << 32, size=(warps, 32, ins.words(role)), dtype=np.uint64).astype(np.uint32)


def test_the_catalog_has_fast_kernels_everywhere_it_should():
    """The paths issue 23 moved off the exact kernel stay off it."""
    have = {(op, a) for op, a in CASES}
    assert ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "sm_89") in have
    ops = {op for op, _ in CASES}
    assert any("kind::mxf8f6f4.block_scale" in op for op in ops)
    assert any("kind::mxf4nvf4.block_scale" in op and "ue4m3" in op for op in ops)
    assert any("kind::mxf4.block_scale" in op and "mma.sp" in op for op in ops)
    assert len(CASES) > 100


@pytest.mark.parametrize("op,arch", CASES, ids=[f"{a}:{o}" for o, a in CASES])
def test_fast_kernel_equals_exact_kernel(op, arch):
    ins = BY_OPCODE[op]
    pl = kernel.plan(op, 0, arch)
    rng = np.random.default_rng(zlib.crc32(f"{arch}:{op}".encode()))
    ordinary = generate(ins, 0, distributions(ins)[0], WARPS, 7)
    a = np.concatenate([_words(rng, ins, "a", WARPS), ordinary["a"]])
    b = np.concatenate([_words(rng, ins, "b", WARPS), ordinary["b"]])
    c = np.concatenate([_words(rng, ins, "c", WARPS), ordinary["c"]])
    e = None
    if ins.is_sparse:     # valid metadata (random nibbles are another input class: tf32 splices)
        e = np.concatenate([generate(ins, 0, distributions(ins)[0], WARPS, 8)["e"], ordinary["e"]])
    scales = None
    if ins.block_scaled:
        s = np.concatenate([_words(rng, ins, "a", WARPS)[..., :1].repeat(2, -1) ^ rng.integers(
            0, 1 << 32, size=(WARPS, 32, 2), dtype=np.uint64).astype(np.uint32), ordinary["s"]])
        scales = kernel.scale_factors(ins, s[..., 0], s[..., 1], (0, 0), (0, 0))
    inputs = [x.copy() for x in (a, b, c)]
    fast = kernel.run(pl, a, b, c, e, scales=scales)
    exact = kernel._generic(pl, a, b, c, kernel._NO_META if e is None else e, scales=scales)
    assert all(np.array_equal(x, y) for x, y in zip(inputs, (a, b, c))), "inputs were modified"
    bad = np.argwhere(fast != exact)
    assert bad.size == 0, f"{len(bad)} words differ, first at warp/lane/word {bad[0]}: " \
                          f"{fast[tuple(bad[0])]:#x} fast, {exact[tuple(bad[0])]:#x} exact"


def test_block_scaled_fast_kernel_takes_the_warps():
    """mxf8f6f4 with ue8m0 scales is computed by the float tensor-core kernel, NaN scales included."""
    op = "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0"
    ins = BY_OPCODE[op]
    pl = kernel.plan(op, 0, "sm_120a")
    assert pl.ftab is not None
    g = generate(ins, 0, "special", 8, 1)
    sfa, sfb = kernel.scale_factors(ins, g["s"][..., 0], g["s"][..., 1], (0, 0), (0, 0))
    sfa[0, 3, 0] = 255                      # a NaN scale: row 3 of warp 0 is NaN
    stats = {}
    old, tensorcore.STATS = tensorcore.STATS, stats
    try:
        d = kernel.run(pl, g["a"], g["b"], g["c"], None, scales=(sfa, sfb))
    finally:
        tensorcore.STATS = old
    assert stats.get("exact", 0) == 0 and stats["special"] + stats.get("ordinary", 0) == 8
    exact = kernel._generic(pl, g["a"], g["b"], g["c"], kernel._NO_META, scales=(sfa, sfb))
    assert np.array_equal(d, exact)


def test_block_scaled_group_kernel_leaves_nan_scales_and_c_to_the_exact_kernel():
    """kind::mxf4nvf4 (groups of 16 products, ue4m3 scales): a NaN scale or a NaN C sends its warp to
    the exact kernel, a zero scale does not; every word equals the exact kernel's."""
    op = "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"
    ins = BY_OPCODE[op]
    pl = kernel.plan(op, 0, "sm_120a")
    assert pl.ftab is not None and pl.ftab["group"]
    g = generate(ins, 0, "normal", 6, 2)
    sfa, sfb = kernel.scale_factors(ins, g["s"][..., 0], g["s"][..., 1], (0, 0), (0, 0))
    sfa[0, 2, 1] = 0x7F                      # a NaN ue4m3 scale
    sfb[1, 5, 0] = 0x00                      # a zero scale: its group is a zero term
    c = g["c"].copy()
    c[2, 7, 0] = 0x7FC00000                  # a NaN C
    stats = {}
    old, tensorcore.STATS = tensorcore.STATS, stats
    try:
        d = kernel.run(pl, g["a"], g["b"], c, None, scales=(sfa, sfb))
    finally:
        tensorcore.STATS = old
    assert stats == {"ordinary": 4, "special": 0, "exact": 2}
    assert np.array_equal(d, kernel._generic(pl, g["a"], g["b"], c, kernel._NO_META, scales=(sfa, sfb)))


def _wgmma_cases():
    seen = {}
    for op, ins in BY_OPCODE.items():
        if not ins.is_wgmma or ins.is_sparse or not ins.elem("a").is_float or ins.n not in (8, 24, 256):
            continue
        seen.setdefault((recipe_params(ins, "sm_90").tobytes(), ins.n), op)
    return sorted(seen.values())


@pytest.mark.parametrize("op", _wgmma_cases())
def test_wgmma_fast_kernel_equals_matrix_kernel(op):
    ins = BY_OPCODE[op]
    m, n, k = ins.mnk
    p = recipe_params(ins, "sm_90")
    fast = warpgroup_mma._fast_runner(ins, p)
    assert fast is not None, "every dense float wgmma recipe is one fused pass"
    rng = np.random.default_rng(n)
    G = 3
    bits = [ins.elem(r).bits for r in "abd"]
    A = rng.integers(0, 1 << bits[0], size=(G, m, k), dtype=np.uint64)
    B = rng.integers(0, 1 << bits[1], size=(G, n, k), dtype=np.uint64)
    C = rng.integers(0, 1 << bits[2], size=(G, m, n), dtype=np.uint64)
    A[0] &= ~np.uint64(1 << (bits[0] - 2))      # group 0: mostly ordinary magnitudes
    B[0] &= ~np.uint64(1 << (bits[1] - 2))
    got = np.zeros((G, m, n), np.uint64)
    assert fast(A, B, C, got) is None
    want = np.zeros((G, m, n), np.uint64)
    wgmma_engine.matrix("tc", A, B, C, p, want)
    assert np.array_equal(got, want)
    # the kernel that reads C's register words and writes D's (warpsim.wgmma's path), scale-d per group
    words = warpgroup_mma._words_runner(ins, "sm_90a")
    assert words is not None
    sd = np.array([1, 0, 1], np.int8)
    ow = np.zeros((G, 128, ins.words("d")), np.uint32)
    assert words(A, B, warpgroup_mma.pack_d(ins, C), sd, ow) is None
    want0 = np.zeros((1, m, n), np.uint64)
    wgmma_engine.matrix("tc", A[1:2], B[1:2], np.zeros_like(C[1:2]), p, want0)
    want[1] = want0[0]
    assert np.array_equal(warpgroup_mma._d_to_matrix(ins, ow), want)


def test_the_dispatch_table_names_every_kind():
    assert set(arch_table.ARCHS["sm_90"].values()) <= set(kernel.DOT_KINDS)
