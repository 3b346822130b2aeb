"""Build the sparse wgmma (``wgmma.mma_async.sp``) capture plan: kernels and per-launch inputs.

    python3 python3 -m warpsim.hw.wgmma_sp_cases OUTDIR     # OUTDIR/{wgmma_sp.cu, inputs.npz, plan.json}

Same kernels and device driver as the dense capture (warpsim/hw/wgmma_cases.py,
warpsim/hw/device/wgmma.py); sparse launches add ``<i>.e``, every thread's metadata word.
Coverage: every sparse opcode with every sparsity selector, A from registers or a
descriptor; numerics: many groups per type combination over every input
distribution; metadata: valid in every thread, valid only in the threads the
selector names (random words elsewhere), or arbitrary words in every thread;
imm-scale and imm-trans variants.  Shared-memory bytes that no operand occupies
hold random bytes in small groups, so a capture also says what the hardware reads.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from . import inputs as gen
from .wgmma_capture import Spec
from ..isa import smem as S
from ..isa.catalog import WGMMA_SP_CATALOG
from ..isa.sparse import metadata_table
from .wgmma_cases import elems, one_per_type, pack_reg, rnd_up, write_plan

SWZ = ("none", "32B", "64B", "128B")
META = ("valid", "selected", "random")   # metadata kinds (see module doc)


def layout_params(rows, kbytes, major, sw, var, k):
    """(lbo, sbo, bytes) of a non-overlapping layout of a rows x kbytes operand (k elements of K)."""
    W = S.SWIZZLE_BYTES[sw]
    g = rows // 8
    if major == "K":
        nk = kbytes // 16                      # core matrices along K
        if not W:
            return (128, nk * 128, g * nk * 128) if var == 0 else (g * 128, 128, g * nk * 128)
        na = -(-kbytes // W)                   # swizzle atoms along K (2 only for 64 B of K, 32B swizzle)
        if na == 1:
            sbo = 8 * W * (1 + var)
            return 16 * (1 + 3 * var), sbo, g * sbo
        return ((g * 8 * W, 8 * W, na * g * 8 * W) if var == 0 else (8 * W, na * 8 * W, na * g * 8 * W))
    nk = k // 8                                # MN-major: blocks of 8 K rows
    nblk = rows * 2
    if not W:
        return ((nblk // 16 * 128, 128, nk * nblk // 16 * 128) if var == 0 else (128, nk * 128, nblk // 16 * nk * 128))
    nb = -(-nblk // W)
    return ((nk * 8 * W, 8 * W, nb * nk * 8 * W) if var == 0 else (8 * W, nb * 8 * W, nb * nk * 8 * W))


def metadata(ins, sel, kind, rng):
    if kind == "random":
        return gen.metadata_words(ins, rng, (128,), valid=False)
    e = gen.metadata_words(ins, rng, (128,), valid=True)
    if kind == "selected":   # random words in the threads the selector does not name
        used = np.zeros(128, bool)
        used[np.unique(metadata_table(ins.opcode, sel)[..., 0])] = True
        e = np.where(used, e, gen.metadata_words(ins, rng, (128,), valid=False))
    return e.astype(np.uint32)


def make_group(spec, rng, dist, mkind, *, sd=1, cfg_a=("K", "none", 0), cfg_b=("K", "none", 0), period=None,
               fill=False):
    ins = spec.ins
    m, n, k = ins.mnk
    kh = k // 2
    ta, tb = ins.elem("a"), ins.elem("b")
    edist = gen.distributions(ins)[0] if dist == gen.RANDOM_METADATA else dist
    A = elems(ta, edist, "a", rng, m * kh).reshape(m, kh)          # compressed A
    B = elems(tb, edist, "b", rng, k * n).reshape(k, n)
    C = elems(ins.elem("d"), edist, "c", rng, m * n).reshape(m, n)
    if not sd and rng.random() < 0.75:   # scale-d = 0 ignores D's input: mostly zeros, sometimes not
        C[:] = 0
    if period and n > period:
        reps = -(-n // period)
        B = np.tile(B[:, :period], (1, reps))[:, :n]
        C = np.tile(C[:, :period], (1, reps))[:, :n]
    regions, info, off = [], {}, 0
    for role, mat, cfg, rows, kk in (("a", A, cfg_a, m, kh), ("b", B.T, cfg_b, n, k)):
        if role == "a" and spec.a_src == "reg":
            continue
        major, sw, var = cfg
        bits = ins.elem(role).bits
        kbytes = kk * bits // 8
        lbo, sbo, size = layout_params(rows, kbytes, major, sw, var, kk)
        W = S.SWIZZLE_BYTES[sw]
        start = off
        if major == "K" and W > kbytes:
            start += kbytes * int(rng.integers(0, W // kbytes))
        desc = S.encode_descriptor(start, lbo, sbo, sw)
        need = S.footprint(desc, rows, kk, bits, major)
        if n <= 64:   # room for reading LBO and SBO the other way round as well
            need = max(need, S.footprint(S.encode_descriptor(start, sbo, lbo, sw), rows, kk, bits, major))
        regions.append((desc, mat, bits, major))
        info[role] = (desc, dict(start=start, lbo=lbo, sbo=sbo, swizzle=sw, major=major))
        off = rnd_up(max(need, off + size) + 256)
    probe = fill and any(c[0] == "MN" or (c[1] == "32B" and r == "b") for r, c in (("a", cfg_a), ("b", cfg_b))
                            if r in info)
    smem = rng.integers(0, 256, off, dtype=np.uint8) if probe else np.zeros(off, np.uint8)
    for desc, mat, bits, major in regions:
        S.write_operand(smem, desc, mat, bits, major)
    e = metadata(ins, spec.selector, "random" if dist == gen.RANDOM_METADATA else mkind, rng)
    return dict(smem=smem, da=info.get("a", (0,))[0], db=info["b"][0],
                a=pack_reg(ins, "a", A) if spec.a_src == "reg" else None, d=pack_reg(ins, "d", C), sd=sd, e=e,
                meta=dict(dist=dist, metadata=mkind if dist != gen.RANDOM_METADATA else "random", sd=int(sd),
                          a=info.get("a", (0, None))[1], b=info["b"][1], period=period))


def launch(spec, groups, purpose):
    sb = rnd_up(max(g["smem"].size for g in groups))
    G = len(groups)
    sm = np.zeros((G, sb), np.uint8)
    for i, g in enumerate(groups):
        sm[i, :g["smem"].size] = g["smem"]
    wa = spec.ins.words("a")
    a = (np.stack([g["a"] for g in groups]) if spec.a_src == "reg" else np.zeros((G, 128, wa), np.uint32))
    return dict(spec=spec, purpose=purpose, smem=sm, desc=np.array([[g["da"], g["db"]] for g in groups], np.uint64),
                a=a.astype(np.uint32), d=np.stack([g["d"] for g in groups]).astype(np.uint32),
                sd=np.array([g["sd"] for g in groups], np.int32), e=np.stack([g["e"] for g in groups]).astype(np.uint32),
                meta=[g["meta"] for g in groups])


@functools.lru_cache(maxsize=2)
def build(seed=2027):
    rng = np.random.default_rng(seed)
    specs, launches = {}, []
    sparse = list(WGMMA_SP_CATALOG)

    def spec_of(ins, a_src="desc", sa=1, sb=1, ta=0, tb=0, sel=0):
        sp = Spec(ins, a_src, sa, sb, ta, tb, sel)
        return specs.setdefault(sp.key(), sp)

    # 1. coverage: every opcode and selector; A form, distribution, metadata kind and layouts cycle
    ci = 0
    for ins in sparse:
        for sel in ins.selectors:
            a_src = "reg" if (ins.n // 8 + sel) % 2 else "desc"
            sp = spec_of(ins, a_src, sel=sel)
            groups = []
            for _ in range(2 if ins.n <= 16 else 1):
                ds = gen.distributions(ins)
                groups.append(make_group(sp, rng, ds[ci % len(ds)], META[ci % 3], sd=int(ci % 3 != 2),
                                         cfg_a=("K", SWZ[(ci // 2) % 4], ci % 2), cfg_b=("K", SWZ[ci % 4], (ci // 4) % 2),
                                         period=None if ins.n <= 32 else 16, fill=ins.n <= 32))
                ci += 1
            launches.append(launch(sp, groups, "coverage"))

    # 2. numerics: many groups per type combination and selector (n = 16)
    for ins in one_per_type(sparse):
        per = 3 if (ins.family == "fp8" and ins.dtype == "f32") else 1
        for sel in ins.selectors:
            for a_src in ("reg", "desc"):
                sp = spec_of(ins, a_src, sel=sel)
                groups = []
                for di, dist in enumerate(gen.distributions(ins)):
                    for j in range(per if a_src == "reg" else (di + sel) % 2):
                        groups.append(make_group(sp, rng, dist, META[(di + j) % 3], sd=int(j % 4 != 3),
                                                 cfg_a=("K", SWZ[(j + di + 1) % 4], j % 2), cfg_b=("K", SWZ[(j + di) % 4], 0)))
                launches.append(launch(sp, groups, "numerics"))

    # 3. imm-scale (one opcode per family and D type) and imm-trans (f16, bf16)
    done = set()
    for ins in sparse:
        if ins.imm_scale and ins.n == 16 and (ins.family, ins.dtype) not in done:
            done.add((ins.family, ins.dtype))
            for a_src in ("desc", "reg"):
                for sa, sb in ((-1, 1), (1, -1), (-1, -1)):
                    sp = spec_of(ins, a_src, sa, sb, sel=ins.selectors[-1])
                    groups = [make_group(sp, rng, d, "valid", cfg_b=("K", SWZ[i % 4], 0), cfg_a=("K", SWZ[(i + 2) % 4], 1))
                              for i, d in enumerate(gen.distributions(ins)[:2])]
                    launches.append(launch(sp, groups, "scale"))
        if ins.imm_trans and ins.n in (8, 16, 64, 256):
            for a_src, ta, tb in (("desc", 1, 0), ("desc", 0, 1), ("desc", 1, 1), ("reg", 0, 1)):
                sp = spec_of(ins, a_src, 1, 1, ta, tb, sel=(ins.n // 8 + ta) % 2)
                groups = []
                for i, sw in enumerate(SWZ if ins.n <= 64 else ("32B", "128B")):
                    ca = ("MN" if ta else "K", sw, i % 2)
                    cb = ("MN" if tb else "K", SWZ[(i + 1) % 4], (i + 1) % 2)
                    groups.append(make_group(sp, rng, gen.distributions(ins)[i % 3], META[i % 3], cfg_a=ca, cfg_b=cb,
                                             period=None if ins.n <= 64 else 16, fill=ins.n <= 16))
                launches.append(launch(sp, groups, "trans"))
    return list(specs.values()), launches


def launch_inputs(seed: int, launch: int) -> dict:
    """The inputs of launch ``launch`` of the plan :func:`build` makes from ``seed`` (registered
    with :mod:`warpsim.hw.golden` as ``wgmma_sp_launch``)."""
    L = build(seed)[1][launch]
    return {k: L[k] for k in ("smem", "desc", "a", "d", "sd", "e")}


def main(out):
    write_plan(out, "wgmma_sp.cu", *build(), ("smem", "desc", "a", "d", "sd", "e"))


if __name__ == "__main__":
    main(sys.argv[1])
