"""Capture plan for Hopper's TMA writes: tensor stores and reductions, bulk reductions,
``tensormap.replace`` and im2col loads (issue 33).

One hand-written PTX module (:func:`ptx_text`) holds an entry per instruction form, so the GPU and
warpsim's PTX loader run the very same statements; :func:`plan` lists the seeded cases (tensor
shapes, boxes, coordinates past the edges, swizzles, element types, reduce ops, tensormap fields
and values).  ``warpsim/hw/device/tma_store_capture.py`` runs them on an H100 (the driver encodes
the tensormaps) and stores the bytes the GPU left in global / shared memory; the replay
(``tests/test_tma_stores.py``) launches the same entries with ``warpsim.ptx`` and compares bytes.

    python -m warpsim.hw.tma_store_cases DIR     # writes DIR/tma_store.ptx and DIR/tma_store_plan.json
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

SEED = 3300
PTX_VERSION = "8.3"
#: reduce op -> tensormap data types (CUtensorMapDataType) the PTX ISA lets it combine
TENSOR_REDUCE_TYPES = {
    "store": (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    "add": (2, 3, 4, 7, 6, 9), "min": (2, 3, 4, 5, 6, 9), "max": (2, 3, 4, 5, 6, 9),
    "inc": (2,), "dec": (2,), "and": (2, 3, 4), "or": (2, 3, 4), "xor": (2, 3, 4),
}
#: what the first capture (H200, 80 tensor cases) showed kills the launch with an illegal instruction:
#: a store / reduction whose box starts at a negative coordinate (every such case; boxes running past
#: the far edge are clipped), and .and/.or/.xor on an int64 tensormap (uint64 works).  The plan keeps
#: a few deliberate cases of each (:data:`FAULT_PROBES`) and leaves them out elsewhere.
FAULT_PROBES = (("store", 1, 2, [-8]), ("add", 2, 7, [0, -1]), ("min", 3, 6, [-8, 0, 0]),
                ("and", 1, 5, [0]), ("xor", 2, 5, [0, 0]))
ESIZE = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2}
#: cp.reduce.async.bulk (non-tensor) op -> PTX types
BULK_REDUCE_TYPES = {
    "add": ("u32", "s32", "u64", "f32", "f64", "noftz.f16", "noftz.bf16"),
    "min": ("u32", "s32", "u64", "s64", "f16", "bf16"), "max": ("u32", "s32", "u64", "s64", "f16", "bf16"),
    "inc": ("u32",), "dec": ("u32",), "and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"),
}
#: tensormap.replace fields: name -> (ordinal count or 0, PTX type, value kind "reg" or immediates)
REPLACE_FIELDS = {
    "global_address": (0, "b64", "reg"), "rank": (0, "b32", "reg"),
    "box_dim": (5, "b32", "reg"), "global_dim": (5, "b32", "reg"), "global_stride": (4, "b64", "reg"),
    "element_stride": (5, "b32", "reg"),
    "elemtype": (0, "b32", tuple(range(13))), "interleave_layout": (0, "b32", (0, 1, 2)),
    "swizzle_mode": (0, "b32", (0, 1, 2, 3)), "fill_mode": (0, "b32", (0, 1)),
}
REPLACE_SPACES = ("global", "shared::cta")
WINDOW = 16384          # shared bytes a tensor case may use (its box footprint)
IM2COL_WINDOW = 16384


def _coords(rank, base=20):
    return "{" + ", ".join(f"%r{base + i}" for i in range(rank)) + "}"


def _load_coords(rank, base=20):
    return [f"  ld.global.s32 %r{base + i}, [%rd2+{4 * i}];" for i in range(rank)]


_COPY_IN = """  mov.u32 %r1, %tid.x;
  ld.param.u32 %r2, [nbytes];
  ld.param.u64 %rd1, [src];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r3, win;
  shl.b32 %r4, %r1, 2;
COPY:
  setp.ge.u32 %p1, %r4, %r2;
  @%p1 bra COPIED;
  cvt.u64.u32 %rd5, %r4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.u32 %r5, [%rd6];
  add.u32 %r6, %r3, %r4;
  st.shared.u32 [%r6], %r5;
  add.u32 %r4, %r4, 512;
  bra COPY;
COPIED:
  fence.proxy.async.shared::cta;
  bar.sync 0;
  setp.ne.u32 %p2, %r1, 0;
  @%p2 bra DONE;
"""


def _tensor_entry(op, rank):
    head = "cp.async.bulk.tensor" if op == "store" else "cp.reduce.async.bulk.tensor"
    red = "" if op == "store" else f".{op}"
    return "\n".join([
        f".visible .entry tma_{op}_{rank}d(.param .align 64 .b8 tm[128], .param .u64 coords, .param .u64 src,"
        " .param .u32 nbytes)",
        "{", "  .reg .b32 %r<32>;", "  .reg .b64 %rd<8>;", "  .reg .pred %p<4>;",
        f"  .shared .align 1024 .b8 win[{WINDOW}];",
        _COPY_IN.rstrip("\n"),
        "  ld.param.u64 %rd2, [coords];", "  cvta.to.global.u64 %rd2, %rd2;", *_load_coords(rank),
        "  mov.u64 %rd3, tm;", "  cvta.param.u64 %rd3, %rd3;",
        f"  {head}.{rank}d.global.shared::cta{red}.tile.bulk_group [%rd3, {_coords(rank)}], [%r3];",
        "  cp.async.bulk.commit_group;", "  cp.async.bulk.wait_group 0;",
        "DONE:", "  ret;", "}", ""])


def _bulk_name(op, t):
    return f"bulk_{op}_{t.replace('noftz.', '')}" if op else "bulk_copy"


def _bulk_entry(op, t):
    instr = ("cp.async.bulk.global.shared::cta.bulk_group" if op is None
             else f"cp.reduce.async.bulk.global.shared::cta.bulk_group.{op}.{t}")
    return "\n".join([
        f".visible .entry {_bulk_name(op, t)}(.param .u64 dst, .param .u64 src, .param .u32 nbytes)",
        "{", "  .reg .b32 %r<32>;", "  .reg .b64 %rd<8>;", "  .reg .pred %p<4>;",
        "  .shared .align 128 .b8 win[4096];",
        _COPY_IN.rstrip("\n"),
        "  ld.param.u64 %rd2, [dst];", "  cvta.to.global.u64 %rd2, %rd2;",
        f"  {instr} [%rd2], [%r3], %r2;",
        "  cp.async.bulk.commit_group;", "  cp.async.bulk.wait_group 0;",
        "DONE:", "  ret;", "}", ""])


def replace_name(field, ordinal, space, imm=None):
    sp = "g" if space == "global" else "s"
    return f"tmr_{field}{'' if ordinal is None else ordinal}{'' if imm is None else '_v' + str(imm)}_{sp}"


def _replace_entry(field, ordinal, space, imm=None):
    """Copy the parameter tensormap to a 128-byte aligned global or shared buffer, replace one field, and
    write the 128 bytes out."""
    _, typ, _ = REPLACE_FIELDS[field]
    val = str(imm) if imm is not None else ("%rd9" if typ == "b64" else "%r9")
    ord_ = f"{ordinal}, " if ordinal is not None else ""
    lines = [f".visible .entry {replace_name(field, ordinal, space, imm)}(.param .align 64 .b8 tm[128], "
             ".param .u64 out, .param .u64 val)",
             "{", "  .reg .b32 %r<16>;", "  .reg .b64 %rd<40>;", "  .reg .pred %p<2>;",
             "  .shared .align 128 .b8 tms[128];",
             "  mov.u32 %r1, %tid.x;", "  setp.ne.u32 %p1, %r1, 0;", "  @%p1 bra DONE;",
             "  ld.param.u64 %rd1, [out];", "  cvta.to.global.u64 %rd1, %rd1;",
             "  ld.param.u64 %rd9, [val];", "  cvt.u32.u64 %r9, %rd9;"]
    for i in range(16):
        lines.append(f"  ld.param.u64 %rd{20 + i % 16}, [tm+{8 * i}];")
        lines.append(f"  st.{'global' if space == 'global' else 'shared'}.u64 [{'%rd1' if space == 'global' else 'tms'}+{8 * i}],"
                     f" %rd{20 + i % 16};")
    target = "[%rd1]" if space == "global" else "[tms]"
    lines.append(f"  tensormap.replace.tile.{field}.{space}.b1024.{typ} {target}, {ord_}{val};")
    if space != "global":
        for i in range(16):
            lines.append(f"  ld.shared.u64 %rd{20 + i}, [tms+{8 * i}];")
            lines.append(f"  st.global.u64 [%rd1+{8 * i}], %rd{20 + i};")
    lines += ["DONE:", "  ret;", "}", ""]
    return "\n".join(lines)


def _im2col_entry(rank):
    offs = ", ".join(f"%rs{i}" for i in range(rank - 2))
    return "\n".join([
        f".visible .entry im2col_{rank}d(.param .align 64 .b8 tm[128], .param .u64 coords, .param .u64 offsets,"
        " .param .u32 nbytes, .param .u64 out, .param .u64 status)",
        "{", "  .reg .b32 %r<40>;", "  .reg .b16 %rs<8>;", "  .reg .b64 %rd<16>;", "  .reg .pred %p<4>;",
        f"  .shared .align 1024 .b8 win[{IM2COL_WINDOW}];", "  .shared .align 8 .b64 bar;",
        "  mov.u32 %r1, %tid.x;", "  mov.u32 %r3, win;",
        "  shl.b32 %r4, %r1, 2;",
        "FILL:", f"  setp.ge.u32 %p1, %r4, {IM2COL_WINDOW};", "  @%p1 bra FILLED;",
        "  add.u32 %r6, %r3, %r4;", "  st.shared.u32 [%r6], -1515870811;", "  add.u32 %r4, %r4, 512;",
        "  bra FILL;",
        "FILLED:", "  bar.sync 0;", "  setp.ne.u32 %p2, %r1, 0;", "  @%p2 bra COPYOUT;",
        "  ld.param.u64 %rd2, [coords];", "  cvta.to.global.u64 %rd2, %rd2;", *_load_coords(rank),
        "  ld.param.u64 %rd4, [offsets];", "  cvta.to.global.u64 %rd4, %rd4;",
        *[f"  ld.global.u16 %rs{i}, [%rd4+{2 * i}];" for i in range(rank - 2)],
        "  ld.param.u32 %r2, [nbytes];", "  mov.u32 %r7, bar;",
        "  mbarrier.init.shared::cta.b64 [%r7], 1;", "  fence.mbarrier_init.release.cluster;",
        "  fence.proxy.async.shared::cta;",
        "  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r7], %r2;",
        "  mov.u64 %rd3, tm;", "  cvta.param.u64 %rd3, %rd3;",
        f"  cp.async.bulk.tensor.{rank}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r3], "
        f"[%rd3, {_coords(rank)}], [%r7], {{{offs}}};",
        "  mov.u32 %r8, 0;", "  mov.u32 %r10, 0;",
        "WAIT:", "  mbarrier.test_wait.parity.shared::cta.b64 %p3, [%r7], 0;", "  @%p3 bra WAITED;",
        "  add.u32 %r8, %r8, 1;", "  setp.lt.u32 %p1, %r8, 262144;", "  @%p1 bra WAIT;", "  bra TIMEOUT;",
        "WAITED:", "  mov.u32 %r10, 1;",
        "TIMEOUT:", "  ld.param.u64 %rd5, [status];", "  cvta.to.global.u64 %rd5, %rd5;",
        "  st.global.u32 [%rd5], %r10;",
        "COPYOUT:", "  bar.sync 0;", "  ld.param.u64 %rd6, [out];", "  cvta.to.global.u64 %rd6, %rd6;",
        "  shl.b32 %r4, %r1, 2;",
        "OUT:", f"  setp.ge.u32 %p1, %r4, {IM2COL_WINDOW};", "  @%p1 bra DONE;",
        "  add.u32 %r6, %r3, %r4;", "  ld.shared.u32 %r11, [%r6];", "  cvt.u64.u32 %rd7, %r4;",
        "  add.s64 %rd8, %rd6, %rd7;", "  st.global.u32 [%rd8], %r11;", "  add.u32 %r4, %r4, 512;", "  bra OUT;",
        "DONE:", "  ret;", "}", ""])


def ptx_text() -> str:
    """Every entry the plan launches, as one PTX module for sm_90a."""
    out = [f".version {PTX_VERSION}", ".target sm_90a", ".address_size 64", ""]
    for op in TENSOR_REDUCE_TYPES:
        for rank in range(1, 6):
            out.append(_tensor_entry(op, rank))
    out.append(_bulk_entry(None, None))
    for op, ts in BULK_REDUCE_TYPES.items():
        for t in ts:
            out.append(_bulk_entry(op, t))
    for field, (n, _, vals) in REPLACE_FIELDS.items():
        for space in REPLACE_SPACES:
            for ordinal in (range(n) if n else (None,)):
                for imm in (vals if vals != "reg" else (None,)):
                    out.append(_replace_entry(field, ordinal, space, imm))
    for rank in (3, 4, 5):
        out.append(_im2col_entry(rank))
    return "\n".join(out)


# ---- the cases ------------------------------------------------------------------------------------

SPAN = {0: 0, 1: 32, 2: 64, 3: 128}


def _footprint(box, esz, span):
    rows = int(np.prod(box[1:])) if len(box) > 1 else 1
    return rows * max(box[0] * esz, span)


def _tensor_case(rng, i):
    ops = list(TENSOR_REDUCE_TYPES)
    op = ops[i % len(ops)]
    rank = 1 + (i // len(ops)) % 5
    dtype = int(rng.choice(TENSOR_REDUCE_TYPES[op]))
    esz = ESIZE[dtype]
    swz = int(rng.integers(0, 4))
    span = SPAN[swz]
    rows = [b for b in (16, 32, 64, 128, 256) if (not span or b <= span) and b // esz <= 256]
    box = [int(rng.choice(rows)) // esz] + [int(rng.integers(1, 7)) for _ in range(rank - 1)]
    while _footprint(box, esz, span) > WINDOW:
        d = 1 + int(np.argmax(box[1:]))
        box[d] = max(1, box[d] // 2)
    dims = [max(1, box[0] * int(rng.integers(1, 3)) - int(rng.integers(0, 3)))] + \
           [int(rng.integers(1, 9)) for _ in range(rank - 1)]
    strides, s = [], -(-dims[0] * esz // 16) * 16 + 16 * int(rng.integers(0, 2))
    for d in range(1, rank):
        strides.append(s)
        s = s * dims[d] + 16 * int(rng.integers(0, 2))
    gbytes = s if rank > 1 else -(-dims[0] * esz // 16) * 16
    q = 16 // esz
    coords = [int(rng.integers(-b, d + 1)) for b, d in zip(box, dims)]
    if rng.random() < 0.35:
        coords = [int(rng.integers(0, max(1, d - b + 1))) for b, d in zip(box, dims)]
    coords[0] = coords[0] // q * q
    coords = [max(0, x) for x in coords]            # negative starts fault (FAULT_PROBES)
    return dict(group="tensor", entry=f"tma_{op}_{rank}d", op=op, rank=rank, dtype=dtype, esz=esz, swizzle=swz,
                dims=dims, strides=strides, box=box, coords=coords, gbytes=int(gbytes),
                nbytes=_footprint(box, esz, span), seed=SEED * 1000 + i)


def _im2col_case(rng, i):
    rank = 3 + i % 3
    dtype = int(rng.choice((0, 1, 6, 7, 9)))
    esz = ESIZE[dtype]
    c = int(rng.choice([16, 32, 64])) // esz * int(rng.integers(1, 3))     # channels (innermost)
    spatial = [int(rng.integers(2, 9)) for _ in range(rank - 2)]           # W (, H (, D))
    n = int(rng.integers(1, 3))
    dims = [c] + spatial + [n]
    lower = [int(rng.integers(-2, 1)) for _ in range(rank - 2)]
    upper = [int(rng.integers(-2, 1)) for _ in range(rank - 2)]
    cpp = int(rng.choice([b for b in (16, 32, 64, 128) if b // esz <= c])) // esz  # channels per pixel
    ppc = int(rng.choice([1, 2, 4, 8, 16, 32, 64]))                       # pixels per column
    swz = int(rng.choice([0, 1, 2, 3])) if cpp * esz <= 32 else int(rng.choice([0, 2, 3]) if cpp * esz <= 64 else 3)
    if cpp * esz > 128:
        swz = 0
    strides, s = [], -(-c * esz // 16) * 16
    for d in range(1, rank):
        strides.append(s)
        s *= dims[d]
    coords = [int(rng.integers(0, max(1, c - cpp + 1))) // (16 // esz) * (16 // esz)] + \
             [int(rng.integers(lo - 1, w + 1)) for lo, w in zip(lower, spatial)] + [int(rng.integers(0, n))]
    offsets = [int(rng.integers(0, 3)) for _ in range(rank - 2)]
    return dict(group="im2col", entry=f"im2col_{rank}d", rank=rank, dtype=dtype, esz=esz, swizzle=swz, dims=dims,
                strides=strides, lower=lower, upper=upper, channels_per_pixel=cpp, pixels_per_column=ppc,
                coords=coords, offsets=offsets, gbytes=int(s), nbytes=cpp * ppc * esz, seed=SEED * 2000 + i)


#: the tensormaps tensormap.replace edits: (dtype, dims, strides, box, element strides, swizzle, fill)
REPLACE_BASES = (
    (6, [64, 32, 8], [128, 4096], [64, 16, 2], [1, 1, 1], 3, 0),
    (7, [33, 7, 5, 3, 2], [144, 1008, 5040, 15120], [8, 4, 2, 1, 2], [1, 2, 1, 1, 2], 1, 1),
    (0, [1000], [], [128], [1], 0, 0),
)
REPLACE_VALUES = {
    "global_address": (0x7F0012345600, 0x123456789ABCDEF1, 0),
    "rank": (0, 2, 4, 7),
    "box_dim": (1, 16, 255, 256),
    "global_dim": (1, 100, 0xFFFFFFFF),
    "global_stride": (16, 4112, 0xFF_FFFF_FFF0, 0x123),
    "element_stride": (1, 3, 8),
}


def plan():
    """Every case of the capture, in order (seeded)."""
    rng = np.random.default_rng(SEED)
    cases = [_tensor_case(rng, i) for i in range(180)]
    for j, (op, rank, dtype, coords) in enumerate(FAULT_PROBES):
        esz = ESIZE[dtype]
        box = [16 // esz] + [2] * (rank - 1)
        dims = [64 // esz] + [4] * (rank - 1)
        strides = [64 * 4 ** d for d in range(rank - 1)]
        cases.append(dict(group="tensor", entry=f"tma_{op}_{rank}d", op=op, rank=rank, dtype=dtype, esz=esz, swizzle=0,
                          dims=dims, strides=strides, box=box, coords=coords, gbytes=64 * 4 ** (rank - 1),
                          nbytes=_footprint(box, esz, 0), seed=SEED * 1000 + 900 + j, probe=True))
    for op, ts in [(None, (None,))] + list(BULK_REDUCE_TYPES.items()):
        for t in ts:
            for k in range(2):
                cases.append(dict(group="bulk", entry=_bulk_name(op, t), op=op, type=t, nbytes=256 if k else 1024,
                                  dst_off=64 * k, seed=SEED * 3000 + len(cases)))
    for b, base in enumerate(REPLACE_BASES):
        for field, (n, _, vals) in REPLACE_FIELDS.items():
            for space in REPLACE_SPACES:
                for ordinal in (range(n) if n else (None,)):
                    if vals == "reg":
                        for v in REPLACE_VALUES[field]:
                            cases.append(dict(group="replace", entry=replace_name(field, ordinal, space), base=b,
                                              field=field, ordinal=ordinal, space=space, value=v))
                    else:
                        for v in vals:
                            cases.append(dict(group="replace", entry=replace_name(field, ordinal, space, v), base=b,
                                              field=field, ordinal=ordinal, space=space, value=v))
    cases += [_im2col_case(rng, i) for i in range(60)]
    return cases


def data_bytes(seed, n):
    """Bytes of a tensor or a shared source (regenerated by the replay from the seed)."""
    return np.random.default_rng(seed).integers(0, 256, size=n, dtype=np.uint8)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else "."
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tma_store.ptx"), "w") as f:
        f.write(ptx_text())
    with open(os.path.join(out, "tma_store_plan.json"), "w") as f:
        json.dump({"seed": SEED, "replace_bases": REPLACE_BASES, "cases": plan()}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
