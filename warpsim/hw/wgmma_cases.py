"""Build the wgmma capture plan: kernels (one cubin) and per-launch inputs, for one H100 run.

    python3 -m warpsim.hw.wgmma_cases OUTDIR    # writes OUTDIR/{wgmma.cu, inputs.npz, plan.json}

Every dense wgmma opcode with register A and descriptor A (coverage), many
groups of a few opcodes per type for the numerics, the imm-scale / imm-trans
variants, and layout probes (round trips) for every swizzle mode and major-ness
per element width.  Inputs come from warpsim's generators; shared memory is
laid out with warpsim.isa.smem.  The device side is warpsim/hw/device/wgmma.py; the committed
corpora keep the GPU's words and regenerate these inputs through :func:`launch_inputs`.
"""

from __future__ import annotations

import functools
import json
import os
import sys

import numpy as np

from . import inputs as gen
from .wgmma_capture import Spec, kernel_source
from ..isa import smem as S
from ..isa.bits import elements_to_words
from ..isa.catalog import BY_OPCODE, WGMMA_CATALOG
from ..isa.layouts import layout

SWZ = ("none", "32B", "64B", "128B")


#: groups kept per launch, by purpose (coverage keeps one A form per opcode above n = 32,
#: alternating register / descriptor A along N)
CORPUS_CAPS = {"coverage": 1, "numerics": 6, "scale": 2, "trans": 2, "probe": 1000}


def layout_params(rows, major, sw, variant):
    """(lbo, sbo, bytes) of a non-overlapping layout of a rows x 32-byte operand."""
    W = S.SWIZZLE_BYTES[sw]
    if major == "K":
        if not W:
            return ((128, 256, rows // 8 * 256) if variant == 0 else (rows // 8 * 128, 128, rows // 8 * 256))
        sbo = 8 * W * (1 + variant)
        return 16 * (1 + 3 * variant), sbo, rows // 8 * sbo
    nblk_bytes = rows * 2
    if not W:
        return ((nblk_bytes // 16 * 128, 128, 2 * nblk_bytes // 16 * 128) if variant == 0
                else (128, 256, nblk_bytes // 16 * 256))
    nb = -(-nblk_bytes // W)
    if variant == 0:
        return 2 * 8 * W, 8 * W, nb * 2 * 8 * W
    return 8 * W, nb * 8 * W, nb * 2 * 8 * W


def rnd_up(x, a=1024):
    return -(-x // a) * a


class Group:
    def __init__(self, smem, da, db, a, d, sd, meta):
        self.smem, self.da, self.db, self.a, self.d, self.sd, self.meta = smem, da, db, a, d, sd, meta


def elems(t, dist, role, rng, n):
    if t.is_float:
        return gen.float_elements(t, dist, role, rng, n)
    return gen.int_elements(t, dist, role, rng, n)


def pack_reg(ins, role, M):
    tab = layout(ins.opcode, role)
    return elements_to_words(M[tab[..., 1], tab[..., 2]], ins.elem(role).bits)


def make_group(spec, rng, dist, *, A=None, B=None, C=None, sd=1, cfg_a=("K", "none", 0), cfg_b=("K", "none", 0),
               period=None, koff=None):
    ins = spec.ins
    m, n, k = ins.mnk
    ta, tb = ins.elem("a"), ins.elem("b")
    if A is None:
        A = elems(ta, dist, "a", rng, m * k).reshape(m, k)
    if B is None:
        B = elems(tb, dist, "b", rng, k * n).reshape(k, n)
    if C is None:
        C = elems(ins.elem("d"), dist, "c", rng, m * n).reshape(m, n)
    if period and n > period:
        reps = -(-n // period)
        B = np.tile(B[:, :period], (1, reps))[:, :n]
        C = np.tile(C[:, :period], (1, reps))[:, :n]
    regions = []
    descs = {}
    off = 0
    for role, mat, cfg, rows in (("a", A, cfg_a, m), ("b", B.T, cfg_b, n)):
        if role == "a" and spec.a_src == "reg":
            continue
        major, sw, var = cfg
        lbo, sbo, size = layout_params(rows, major, sw, var)
        W = S.SWIZZLE_BYTES[sw]
        start = off
        if major == "K" and W > 32:
            j = int(rng.integers(0, W // 32)) if koff is None else koff
            start += 32 * j
        desc = S.encode_descriptor(start, lbo, sbo, sw)
        need = max(S.footprint(desc, rows, k, max(1, ins.elem(role).bits), major),
                   S.footprint(S.encode_descriptor(start, sbo, lbo, sw), rows, k, max(1, ins.elem(role).bits), major))
        regions.append((desc, mat, role, major))
        descs[role] = (desc, dict(start=start, lbo=lbo, sbo=sbo, swizzle=sw, major=major))
        off = rnd_up(max(need, off + size) + 256)
    smem = np.zeros(off, np.uint8)
    for desc, mat, role, major in regions:
        S.write_operand(smem, desc, mat, ins.elem(role).bits, major)
    a_words = pack_reg(ins, "a", A) if spec.a_src == "reg" else None
    d_words = pack_reg(ins, "d", C)
    meta = dict(dist=dist, sd=int(sd), a=descs.get("a", (0, None))[1], b=descs["b"][1], period=period)
    return Group(smem, descs.get("a", (0,))[0], descs["b"][0], a_words, d_words, sd, meta)


def launch(spec, groups, purpose):
    sb = rnd_up(max(g.smem.size for g in groups))
    G = len(groups)
    sm = np.zeros((G, sb), np.uint8)
    for i, g in enumerate(groups):
        sm[i, :g.smem.size] = g.smem
    desc = np.array([[g.da, g.db] for g in groups], dtype=np.uint64)
    wa = spec.ins.words("a")
    a = (np.stack([g.a for g in groups]) if spec.a_src == "reg" else np.zeros((G, 128, wa), np.uint32)).astype(np.uint32)
    d = np.stack([g.d for g in groups]).astype(np.uint32)
    sd = np.array([g.sd for g in groups], dtype=np.int32)
    return dict(spec=spec, purpose=purpose, smem=sm, desc=desc, a=a, d=d, sd=sd, meta=[g.meta for g in groups])


def cfg_choices(ins, role, trans):
    bits = ins.elem(role).bits
    majors = ("MN",) if trans else ("K",)
    return [(mj, sw, v) for mj in majors for sw in SWZ for v in (0, 1)] if bits else []


def capture_order():
    """The catalog's dense wgmma entries in the order of the H100 capture (made before the int8 row
    was split by PTX ISA version): int8 type pairs in s8.s8, s8.u8, u8.s8, u8.u8 order."""
    mix = [("s8", "s8"), ("s8", "u8"), ("u8", "s8"), ("u8", "u8")]
    fams = []
    for i in WGMMA_CATALOG:
        if i.family not in fams:
            fams.append(i.family)
    return sorted(WGMMA_CATALOG, key=lambda i: (fams.index(i.family),
                                                mix.index((i.atype, i.btype)) if i.family == "int8" else 0))


@functools.lru_cache(maxsize=2)
def build(seed=2026):
    rng = np.random.default_rng(seed)
    specs, launches = {}, []

    def spec_of(ins, a_src="desc", sa=1, sb=1, ta=0, tb=0):
        sp = Spec(ins, a_src, sa, sb, ta, tb)
        return specs.setdefault(sp.key(), sp)

    def dists(ins):
        return gen.distributions(ins)

    # 1. coverage: every opcode, both A forms; distributions and layouts cycle
    ci = 0
    order = capture_order()
    for ins in order:
        for a_src in ("desc", "reg"):
            sp = spec_of(ins, a_src)
            ng = 2 if ins.n <= 32 else 1
            groups = []
            for _ in range(ng):
                ds = dists(ins)
                dist = ds[ci % len(ds)]
                ca = (("K", SWZ[(ci // 2) % 4], ci % 2))
                cb = (("K", SWZ[ci % 4], (ci // 4) % 2))
                groups.append(make_group(sp, rng, dist, cfg_a=ca, cfg_b=cb, sd=int(ci % 5 != 4),
                                         period=None if ins.n <= 32 else 16))
                ci += 1
            launches.append(launch(sp, groups, "coverage"))

    # 2. numerics: many groups per type combination (n = 16, register A, K-major none and swizzled)
    for ins in one_per_type(order):
        per = 16 if ins.family == "fp8" and ins.dtype == "f32" else (6 if ins.family == "fp8" else 4)
        for a_src in ("reg", "desc"):
            sp = spec_of(ins, a_src)
            groups = []
            for dist in dists(ins):
                for j in range(per if a_src == "reg" else 2):
                    groups.append(make_group(sp, rng, dist, cfg_b=("K", SWZ[j % 4], 0), cfg_a=("K", SWZ[(j + 1) % 4], 0),
                                             sd=int(j % 4 != 3)))
            launches.append(launch(sp, groups, "numerics"))

    # 3. imm-scale and imm-trans variants
    for ins in order:
        if ins.imm_scale and ins.n == 16:
            for a_src in ("desc", "reg"):
                for sa, sb in ((-1, 1), (1, -1), (-1, -1)):
                    sp = spec_of(ins, a_src, sa, sb)
                    groups = [make_group(sp, rng, d, cfg_b=("K", SWZ[i % 4], 0), sd=int(i % 3 != 2))
                              for i, d in enumerate(dists(ins)[:2])]
                    launches.append(launch(sp, groups, "scale"))
        if ins.imm_trans and ins.n in (8, 16, 40, 64, 128, 256):
            for a_src, ta, tb in (("desc", 1, 0), ("desc", 0, 1), ("desc", 1, 1), ("reg", 0, 1)):
                for sa in ((1, -1) if ins.n == 16 else (1,)):
                    sp = spec_of(ins, a_src, sa, 1, ta, tb)
                    groups = []
                    for i, sw in enumerate(SWZ):
                        ca = ("MN" if ta else "K", sw, i % 2)
                        cb = ("MN" if tb else "K", SWZ[(i + 1) % 4], (i + 1) % 2)
                        groups.append(make_group(sp, rng, dists(ins)[i % 3], cfg_a=ca, cfg_b=cb, sd=1,
                                                 period=None if ins.n <= 64 else 16))
                    launches.append(launch(sp, groups, "trans"))

    # 4. layout probes: one-hot A in registers reads B back exactly; one-hot B reads A back.
    probe_b = {"f16": ("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", 16),
               "tf32": ("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32", 32),
               "u8": ("wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.u8", 8),
               "b1": ("wgmma.mma_async.sync.aligned.m64n64k256.s32.b1.b1.and.popc", 1)}
    for name, (op, bits) in probe_b.items():
        ins = BY_OPCODE[op]
        m, n, k = ins.mnk
        for trans in ((0, 1) if bits == 16 else (0,)):
            # B probe: A registers one-hot, D = B[k(m), n]
            sp = spec_of(ins, "reg", 1, 1, 0, trans)
            groups = []
            for sw in SWZ:
                for var in (0, 1):
                    for part in range(4 if bits in (8, 1) else 1):
                        B = probe_values(bits, k, n, part, rng)
                        A = np.zeros((m, k), np.uint64)
                        rowk = (np.arange(m) + (64 * part if bits == 1 else 0)) % k
                        A[np.arange(m), rowk] = one(bits)
                        C = np.zeros((m, n), np.uint64)
                        g = make_group(sp, rng, None, A=A, B=B, C=C, sd=0, cfg_b=("MN" if trans else "K", sw, var))
                        g.meta["probe"] = f"B {name} part {part}"
                        groups.append(g)
            launches.append(launch(sp, groups, "probe"))
            # A probe (descriptor A): B one-hot (K-major none), D[m, n] = A[m, k(n)]
            if bits == 1:
                continue
            sp = spec_of(ins, "desc", 1, 1, trans, 0)
            groups = []
            for sw in SWZ:
                for var in (0, 1):
                    for part in range(2 if bits == 8 else 1):
                        A = probe_values(bits, m, k, part, rng)
                        B = np.zeros((k, n), np.uint64)
                        B[np.arange(n) % k, np.arange(n)] = one(bits)
                        C = np.zeros((m, n), np.uint64)
                        g = make_group(sp, rng, None, A=A, B=B, C=C, sd=0, cfg_a=("MN" if trans else "K", sw, var),
                                       cfg_b=("K", "none", 0))
                        g.meta["probe"] = f"A {name} part {part}"
                        groups.append(g)
            launches.append(launch(sp, groups, "probe"))
    return list(specs.values()), launches


def launch_inputs(seed: int, launch: int, groups: list) -> dict:
    """The inputs of groups ``groups`` of launch ``launch`` of the plan :func:`build` makes from
    ``seed`` (registered with :mod:`warpsim.hw.golden` as ``wgmma_launch``)."""
    L = build(seed)[1][launch]
    return {k: L[k][list(groups)] for k in ("smem", "desc", "a", "d", "sd")}


def one(bits):
    return {16: 0x3C00, 32: 0x3F800000, 8: 1, 1: 1}[bits]


def probe_values(bits, r, c, part, rng):
    """Distinct, exactly representable element values whose bits name their position."""
    idx = np.arange(r * c, dtype=np.uint64).reshape(r, c)
    if bits == 16:
        return idx + np.uint64(1)                       # positive f16 below 0x7C00
    if bits == 32:
        return ((np.uint64(64) + (idx >> np.uint64(10))) << np.uint64(23)) | ((idx & np.uint64(1023)) << np.uint64(13))
    if bits == 8:
        return (idx >> np.uint64(8 * (part % 2))) & np.uint64(0xFF) if part < 2 else rng.integers(0, 256, (r, c), dtype=np.uint64)
    return rng.integers(0, 2, (r, c), dtype=np.uint64)


def one_per_type(instructions, n=16):
    """The first of ``instructions`` with each (family, A, B, D type, .satfinite) and this n."""
    seen = set()
    for ins in instructions:
        key = (ins.family, ins.atype, ins.btype, ins.dtype, ins.satfinite)
        if key not in seen and ins.n == n:
            seen.add(key)
            yield ins


def write_plan(out, cu_name, specs, launches, arrays_of):
    """Write a capture plan into ``out``: the kernels' CUDA source (``cu_name``), every launch's input
    arrays (``arrays_of``: which of a launch's entries) in inputs.npz, and plan.json."""
    os.makedirs(out, exist_ok=True)
    index = {sp.key(): i for i, sp in enumerate(specs)}
    with open(os.path.join(out, cu_name), "w") as f:
        f.write(kernel_source(specs))
    arrays, plan = {}, []
    for i, L in enumerate(launches):
        for k in arrays_of:
            arrays[f"{i}.{k}"] = L[k]
        plan.append(dict(kernel=index[L["spec"].key()], spec=L["spec"].key(), purpose=L["purpose"],
                         groups=len(L["sd"]), sbytes=int(L["smem"].shape[1]), meta=L["meta"]))
    np.savez_compressed(os.path.join(out, "inputs.npz"), **arrays)
    with open(os.path.join(out, "plan.json"), "w") as f:
        json.dump(dict(specs=[sp.key() for sp in specs], launches=plan), f)
    print(len(specs), "kernels,", len(launches), "launches,", sum(p["groups"] for p in plan), "groups")


def main(out):
    write_plan(out, "wgmma.cu", *build(), ("smem", "desc", "a", "d", "sd"))


if __name__ == "__main__":
    main(sys.argv[1])
    # then compile: split wgmma.cu at its "// spec " lines into part0..3.cu (spec i in part i % 4) and
    # nvcc -gencode=arch=compute_90a,code=sm_90a -cubin each; warpsim/hw/device/wgmma.py loads part*.cubin
