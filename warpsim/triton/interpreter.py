"""Triton's CPU interpreter (``TRITON_INTERPRET=1``) with ``tl.dot`` computed as the compiled kernel computes it.

The interpreter evaluates ``tl.dot`` as a numpy float32 matmul; a compiled kernel chains tensor-core
instructions in k order onto its accumulator.  Inside ``exact(arch=...)`` (or after ``enable(...)``)
every interpreted ``tl.dot`` is replaced by the instruction chain Triton 3.6 selects for the target
(:func:`lowering`), computed by :func:`warpsim.gemm`.  A front end: nothing below imports it.

Needs the optional extra ``warpsim[triton]`` (triton and a CPU torch).  See docs/triton.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import threading

import numpy as np

__all__ = ["exact", "enable", "disable", "lowering", "Lowering", "TARGETS", "recorded", "record"]

#: Triton targets whose ``tl.dot`` lowering is modelled -> the compute capability Triton compiles for.
TARGETS = {"sm_80": 80, "sm_86": 86, "sm_89": 89, "sm_90a": 90, "sm_120": 120}
#: The warpsim architecture whose instruction recipes a target's GPU computes with.
_NUMERICS_ARCH = {"sm_80": "sm_80", "sm_86": "sm_86", "sm_89": "sm_89", "sm_90a": "sm_90", "sm_90": "sm_90",
                  "sm_120": "sm_120"}
PATHS = ("auto", "mma", "wgmma")

_FP8 = {"fp8e4nv": "e4m3", "fp8e5": "e5m2"}
_F16_OP = "mma.sync.aligned.m16n8k16.row.col.{acc}.{t}.{t}.{acc}"
_TF32_OP = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
_INT8_OP = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"
#: Triton's int8 wgmma has no .satfinite: the s32 accumulator wraps (the H100 capture shows it), which is what
#: the chained mma of equal k without .satfinite computes
_INT8_WRAP_OP = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"
_F64_OP = {80: "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 86: "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
           90: "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64"}
_FP8_MMA_OP = "mma.sync.aligned.m16n8k32.row.col.{acc}.{a}.{b}.{acc}"
_FP8_WGMMA_OP = "wgmma.mma_async.sync.aligned.m64n8k32.{acc}.{a}.{b}"


@dataclasses.dataclass(frozen=True)
class Lowering:
    """What one compiled ``tl.dot`` computes: the instruction chained in k order onto the accumulator.

    kind: "mma" (one instruction chained through K), "tf32x3" (three tf32 chains, Triton's split of
    f32 into a tf32 high and low part), "fma" (an f32 FMA chain, ``input_precision="ieee"``).
    instruction: the warpsim opcode whose model is chained ("mma" / "tf32x3"); wgmma f16/bf16/tf32/int8
    compute what the mma opcode of equal k computes (int8: the one without .satfinite, as Triton's
    wgmma wraps), so only fp8 names a wgmma opcode.
    path: "mma" (mma.sync) or "wgmma" -- what the compiled kernel issues.
    fp8_to_f16: the fp8 operands are converted to f16 (exactly) before an f16 instruction.
    k_order: "fp8_interleave" -- Triton's fp8 mma.sync operand layout feeds the k elements of every 32 in the
    order (k // 2) % 2 == 0 first (docs/gemm.md); None -- plain k order.
    promote_every: fp8 wgmma with ``max_num_imprecise_acc``: partials from zero added into the accumulator.
    arch: the warpsim architecture whose recipes compute the instruction (the GPU that runs it).

    Example:

    >>> lo = warpsim.triton.lowering("sm_89", "fp32", "fp32", "fp32", input_precision="tf32x3")
    >>> isinstance(lo, warpsim.triton.Lowering), lo.kind, lo.instruction
    (True, 'tf32x3', 'mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32')
    """
    kind: str
    instruction: str | None
    path: str
    arch: str
    fp8_to_f16: bool = False
    k_order: str | None = None
    promote_every: int | None = None


def _fp8_k_order(K):
    t = np.arange(32)
    blk = np.concatenate([t[(t // 2) % 2 == 0], t[(t // 2) % 2 == 1]])
    return (np.arange(K // 32)[:, None] * 32 + blk).ravel()


def _check_target(arch):
    if arch not in TARGETS:
        raise ValueError(f"Triton target {arch!r} is not modelled; modelled targets: {', '.join(TARGETS)} "
                         "(sm_100 lowers tl.dot to tcgen05, which warpsim does not model)")
    return arch


def lowering(arch, a, b, out, *, input_precision="tf32", max_num_imprecise_acc=None, shape=(16, 16, 16),
             num_warps=4, path="auto", device=None) -> Lowering:
    """The instruction Triton 3.6 issues for one ``tl.dot`` compiled for ``arch``.

    a, b, out: Triton dtype names ("fp16", "bf16", "fp32", "fp8e4nv", "fp8e5", "int8"; out "fp32",
    "fp16", "int32"); shape: (M, N, K) of the dot, or (batch, M, N, K); num_warps: the launch's.
    path: "auto" applies Triton's rule; "mma" / "wgmma" pin it (ValueError where Triton could not).
    device: the target whose GPU runs the code (default: ``arch``'s own), e.g. "sm_90a" for the sm_80
    lowering run on an H100.  The rules were read off Triton 3.6's PTX for every target (docs/triton.md).

    Example:

    >>> lo = warpsim.triton.lowering("sm_90a", "fp16", "fp16", "fp32", shape=(64, 64, 16))
    >>> lo.path, lo.instruction
    ('wgmma', 'mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32')
    >>> lo = warpsim.triton.lowering("sm_80", "fp8e5", "fp8e5", "fp32")
    >>> lo.path, lo.fp8_to_f16, lo.k_order
    ('mma', True, 'fp8_interleave')
    """
    _check_target(arch)
    if path not in PATHS:
        raise ValueError(f"path {path!r}: allowed {', '.join(PATHS)}")
    num_arch = _NUMERICS_ARCH[device or arch] if (device or arch) in _NUMERICS_ARCH else None
    if num_arch is None:
        raise ValueError(f"device {device!r} is not modelled; allowed: {', '.join(TARGETS)}")
    cap = TARGETS[arch]
    rank = len(shape) - 1            # (M, N, K): a 2-D dot; (batch, M, N, K): 3-D
    M, N, K = shape[-3:]
    if a != b and not (a in _FP8 and b in _FP8):
        raise NotImplementedError(f"tl.dot of {a} x {b}: Triton requires equal operand types (fp8 may mix)")
    isfp8 = a in _FP8
    if isfp8 and cap < 89 and "fp8e4nv" in (a, b):
        raise NotImplementedError(f"tl.dot of {a} x {b} on {arch}: Triton 3.6 does not compile e4m3 (fp8e4nv) before sm_89")
    if a == "fp32" and input_precision == "ieee":
        if path == "wgmma":
            raise ValueError("path='wgmma' pinned, but an ieee f32 tl.dot is an FMA loop, no tensor-core instruction")
        return Lowering("fma", None, "fma", num_arch)
    # Triton's MMA v3 (wgmma) rule on sm_90a: rank 2, M % 64 == 0, N % 8 == 0, num_warps % 4 == 0,
    # K at least one instruction (256 bits of A), and fp8 with an f32 accumulator only when
    # max_num_imprecise_acc >= 32 (Triton's default there is 2**30).
    bits = {"fp16": 16, "bf16": 16, "fp32": 32, "int8": 8, "fp64": 64}.get(a, 8)
    imp = (2 ** 30 if max_num_imprecise_acc is None else max_num_imprecise_acc) if isfp8 else None
    v3 = (cap == 90 and a != "fp64" and rank == 2 and M % 64 == 0 and N % 8 == 0 and num_warps % 4 == 0 and K >= 256 // bits
          and not (isfp8 and out == "fp32" and imp < 32))
    if path == "wgmma" and cap != 90:
        raise ValueError(f"path='wgmma' pinned, but {arch} has no wgmma (sm_90a only)")
    if path == "wgmma" and not v3:
        raise ValueError(f"path='wgmma' pinned, but Triton would not select wgmma for this dot: needs a 2-D dot with "
                         f"M % 64 == 0, N % 8 == 0, num_warps % 4 == 0, K >= {256 // bits}"
                         + (", and max_num_imprecise_acc >= 32 for fp8 with an f32 accumulator" if isfp8 else "")
                         + f" (got shape {tuple(shape)}, num_warps {num_warps})")
    use_wgmma = v3 and path != "mma"
    p = "wgmma" if use_wgmma else "mma"
    if a in ("fp16", "bf16"):
        if a == "bf16" and out != "fp32":
            raise NotImplementedError(f"tl.dot of bf16 with out_dtype {out}: Triton accumulates bf16 in fp32 only")
        acc = {"fp32": "f32", "fp16": "f16"}[out]
        return Lowering("mma", _F16_OP.format(acc=acc, t=a.replace("fp", "f")), p, num_arch)
    if a == "fp32":
        if input_precision == "tf32":
            return Lowering("mma", _TF32_OP, p, num_arch)
        if input_precision == "tf32x3":
            return Lowering("tf32x3", _TF32_OP, p, num_arch)
        raise NotImplementedError(f"tl.dot input_precision {input_precision!r} is not modelled; modelled: ieee, tf32, tf32x3")
    if a == "int8":
        return Lowering("mma", _INT8_WRAP_OP if use_wgmma else _INT8_OP, p, num_arch)
    if a == "fp64":
        if cap not in _F64_OP:
            raise NotImplementedError(f"tl.dot of fp64 on {arch}: Triton lowers it to an f64 FMA loop there, not modelled")
        return Lowering("mma", _F64_OP[cap], "mma", num_arch)
    if isfp8:
        acc = {"fp32": "f32", "fp16": "f16"}[out]
        ta, tb = _FP8[a], _FP8[b]
        if use_wgmma:
            pe = imp if (out == "fp32" and imp <= K) else None
            if pe is not None and pe % 32:
                raise NotImplementedError(f"max_num_imprecise_acc {imp}: only multiples of the wgmma k (32) are modelled")
            return Lowering("mma", _FP8_WGMMA_OP.format(acc=acc, a=ta, b=tb), p, num_arch, promote_every=pe)
        if cap in (89, 120):
            return Lowering("mma", _FP8_MMA_OP.format(acc=acc, a=ta, b=tb), p, num_arch)
        return Lowering("mma", _F16_OP.format(acc=acc, t="f16"), p, num_arch, fp8_to_f16=True, k_order="fp8_interleave")
    raise NotImplementedError(f"tl.dot of {a} x {b} -> {out} on {arch} is not modelled; modelled operand types: "
                              "fp16, bf16, fp32 (ieee, tf32, tf32x3), fp8e4nv, fp8e5, int8, fp64")


# ---------------------------------------------------------------------------------------------------------
# arithmetic of one lowered dot on the interpreter's numpy arrays


def _as_operand(x, tname):
    """The interpreter's storage (bf16 as uint16, fp8 as uint8 words) as values warpsim.gemm converts."""
    import ml_dtypes

    view = {"bf16": ml_dtypes.bfloat16, "fp8e4nv": ml_dtypes.float8_e4m3fn, "fp8e5": ml_dtypes.float8_e5m2}.get(tname)
    return np.asarray(x).view(view) if view is not None else np.asarray(x)


def _fma_f32(a, b, c):
    """fma.rn.f32 elementwise, exactly: the f64 product is exact, the f64 sum is rounded to odd, then to f32."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)
        cc = c.astype(np.float64)
        s = p + cc
        bb = s - p
        err = (p - (s - bb)) + (cc - bb)                  # TwoSum: s + err == p + c exactly
        odd = (s.view(np.uint64) & 1) == 1
        fix = np.isfinite(s) & (err != 0) & ~odd
        s = np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
        r = s.astype(np.float32)
    r = np.where(np.isnan(r), np.uint32(0x7FFFFFFF).view(np.float32), r)   # the GPU's canonical NaN
    return r.astype(np.float32)


def _fma_chain(A, B, C):
    """Triton's FMA dot: acc = fma(a[:, k], b[k, :], acc) for k in order, from C (f32)."""
    A = np.asarray(A, np.float32)
    B = np.asarray(B, np.float32)
    acc = np.array(C, np.float32, copy=True)
    for k in range(A.shape[-1]):
        acc = _fma_f32(A[..., :, k, None], B[..., k, None, :], acc)
    return acc


def _rna_tf32(x):
    """cvt.rna.tf32.f32: keep 10 mantissa bits, rounding to nearest, ties away (as f32 words)."""
    w = np.asarray(x, np.float32).view(np.uint32)
    fin = (w & 0x7F800000) != 0x7F800000
    r = np.where(fin, (w + np.uint32(0x1000)) & np.uint32(0xFFFFE000), w)
    return r.astype(np.uint32).view(np.float32)


def _tf32x3(A, B, C, lw: Lowering):
    """Triton 3.6's tf32x3 (read off its PTX for mma.sync and wgmma): big = cvt.rna.tf32(x), small = x - big
    (an f32 subtraction, not rounded again: the tensor core ignores its 13 low bits); from +0 the chain
    small_a*big_b, then big_a*small_b, then NaN -> 0, then big_a*big_b, all in k order onto one
    accumulator; the dot's result is fadd(C, that)."""
    import warpsim

    A = np.asarray(A, np.float32)
    B = np.asarray(B, np.float32)
    ab, bb = _rna_tf32(A), _rna_tf32(B)
    with np.errstate(invalid="ignore", over="ignore"):
        asm, bsm = (A - ab).astype(np.float32), (B - bb).astype(np.float32)
    g = functools.partial(warpsim.gemm, instruction=lw.instruction, arch=lw.arch, pad=True)
    z = np.zeros(np.broadcast_shapes(A.shape[:-1] + (B.shape[-1],), np.shape(C)), np.float32)
    d = g(asm, bb, z)
    d = g(ab, bsm, d)
    d = np.where(np.isnan(d), np.float32(0), d).astype(np.float32)
    d = g(ab, bb, d)
    with np.errstate(invalid="ignore", over="ignore"):
        r = (np.asarray(C, np.float32) + d).astype(np.float32)
    return np.where(np.isnan(r), np.uint32(0x7FFFFFFF).view(np.float32), r)


def compute(lw: Lowering, A, B, C, atype, btype):
    """D of one ``tl.dot`` lowered as ``lw``: A (.., M, K), B (.., K, N), C (.., M, N) in the interpreter's storage."""
    import warpsim

    if lw.kind == "fma":
        return _fma_chain(A, B, C)
    if lw.kind == "tf32x3":
        return _tf32x3(A, B, C, lw)
    a, b = _as_operand(A, atype), _as_operand(B, btype)
    if lw.fp8_to_f16:
        a, b = a.astype(np.float16), b.astype(np.float16)
    kw = {}
    K = a.shape[-1]
    if lw.k_order == "fp8_interleave":
        if K % 32:                              # Triton pads K of an fp8 mma.sync dot to 32 with zeros
            pad = 32 - K % 32
            a = np.concatenate([a, np.zeros(a.shape[:-1] + (pad,), a.dtype)], axis=-1)
            b = np.concatenate([b, np.zeros(b.shape[:-2] + (pad,) + b.shape[-1:], b.dtype)], axis=-2)
            K += pad
        kw["k_order"] = _fp8_k_order(K)
    if lw.promote_every:
        kw["promote_every"] = lw.promote_every
    D = warpsim.gemm(a, b, C, instruction=lw.instruction, arch=lw.arch, pad=True, **kw)
    return np.asarray(D)


# ---------------------------------------------------------------------------------------------------------
# the interpreter patch


@dataclasses.dataclass
class _Config:
    arch: str
    device: str | None
    num_warps: int | None
    path: str
    fallback: str | None


_state = threading.local()
_lock = threading.RLock()
_installed: list = []          # stack of active configurations (enable() and nested exact())
_saved: dict = {}
_records: list | None = None


def _current():
    return _installed[-1] if _installed else None


def _tname(dt) -> str:
    return dt.name if hasattr(dt, "name") else str(dt)


def _exact_create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
    """InterpreterBuilder.create_dot under warpsim: the lowered instruction chain onto d."""
    from triton.runtime.interpreter import TensorHandle

    cfg = _current()
    at, bt, ot = _tname(a.dtype.scalar), _tname(b.dtype.scalar), _tname(d.dtype.scalar)
    prec = _precision_name(input_precision)
    nw = cfg.num_warps or getattr(_state, "launch_num_warps", None) or 4
    shape = a.data.shape[:-1] + (b.data.shape[-1], a.data.shape[-1])
    try:
        lw = lowering(cfg.arch, at, bt, ot, input_precision=prec, max_num_imprecise_acc=max_num_imprecise_acc,
                      shape=shape, num_warps=nw, path=cfg.path, device=cfg.device)
    except NotImplementedError:
        if cfg.fallback == "numpy":
            return _saved["create_dot"](self, a, b, d, input_precision, max_num_imprecise_acc)
        raise
    D = compute(lw, a.data, b.data, d.data, at, bt).astype(d.data.dtype, copy=False)
    if _records is not None:
        _records.append(dict(lowering=lw, a=np.array(a.data), b=np.array(b.data), c=d.data, d=D,
                             atype=at, btype=bt, out=ot, launch=getattr(_state, "launch", None)))
    return TensorHandle(D, d.dtype.scalar)


_SCALED_FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")


def _format_name(f) -> str:
    f = getattr(f, "value", f)
    if not isinstance(f, str) or f not in _SCALED_FORMATS:
        raise ValueError(f"tl.dot_scaled format {f!r}: allowed {', '.join(_SCALED_FORMATS)}")
    return f


def _scaled_operand(x, fmt, k_pack, scale, scale_type, k_axis):
    """One dot_scaled operand as float64 values: e2m1 unpacked (two per byte along K, the first in the
    low nibble), times its per-block scale along K (scale_type "ue8m0": blocks of 32, "ue4m3": of 16;
    the scale array is (rows or columns, K / block))."""
    from ..isa.codec import to_values

    raw = np.asarray(x)
    if fmt == "e2m1":
        if not k_pack:
            raise NotImplementedError("tl.dot_scaled with an e2m1 operand packed along M / N (k_pack=False) "
                                      "has no numpy fallback; pack it along K")
        raw = raw.astype(np.uint8)
        pair = np.stack([raw & 0xF, raw >> 4], axis=k_axis)      # (.., K/2, 2) or (.., K/2, 2, N)
        raw = pair.reshape(raw.shape[:-1] + (-1,)) if k_axis == -1 else pair.reshape(raw.shape[:-2] + (-1, raw.shape[-1]))
        v = to_values(raw, "e2m1").astype(np.float64)
    else:
        width = np.uint16 if fmt in ("bf16", "fp16") else np.uint8
        v = to_values(raw.view(width), {"fp16": "f16"}.get(fmt, fmt)).astype(np.float64)
    if scale is None:
        return v
    sv = to_values(np.asarray(scale).view(np.uint8), scale_type).astype(np.float64)
    sv = np.repeat(sv, 16 if scale_type == "ue4m3" else 32, axis=-1)       # (rows, K)
    if sv.shape[-1] != v.shape[k_axis]:
        raise ValueError(f"tl.dot_scaled: a scale array of {np.shape(scale)} does not cover K = {v.shape[k_axis]}")
    return v * (sv if k_axis == -1 else np.swapaxes(sv, -1, -2))


def _exact_dot_scaled(self, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, fast_math, lhs_k_pack,
                      rhs_k_pack, out_dtype):
    """TritonSemantic.dot_scaled in the interpreter under warpsim (Triton 3.6's interpreter has none):
    NotImplementedError naming the forms, or with fallback="numpy" a float32 numpy product of the
    scaled operands (a reference, not what any GPU computes bit for bit)."""
    import triton.runtime.interpreter as ti

    if not isinstance(self.builder, ti.InterpreterBuilder):
        return _saved["dot_scaled"](self, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, fast_math,
                                    lhs_k_pack, rhs_k_pack, out_dtype)
    import triton.language as tl

    cfg = _current()
    fa, fb = _format_name(lhs_format), _format_name(rhs_format)
    none = lambda s: s is None or getattr(s, "value", 0) is None  # noqa: E731
    sa, sb = (None if none(s) else s for s in (lhs_scale, rhs_scale))
    if cfg.fallback != "numpy":
        raise NotImplementedError(
            f"tl.dot_scaled ({fa} x {fb}, block scales {'given' if sa is not None or sb is not None else 'none'}) "
            f"on {cfg.arch} is not modelled by warpsim.triton: Triton lowers it to block-scaled tensor-core MMAs "
            "(sm_100 tcgen05, sm_120 mma kind::mxf8f6f4 / mxf4) or to an upcast emulation elsewhere, and neither "
            "lowering is modelled; pass fallback='numpy' for a float32 numpy reference (not bit-exact)")
    stype = lambda sc: "ue4m3" if sc is not None and sc.dtype.is_fp8e4nv() else "ue8m0"  # noqa: E731
    A = _scaled_operand(lhs.handle.data, fa, lhs_k_pack, None if sa is None else sa.handle.data, stype(sa), -1)
    B = _scaled_operand(rhs.handle.data, fb, rhs_k_pack, None if sb is None else sb.handle.data, stype(sb), -2)
    if A.shape[-1] != B.shape[-2]:
        raise ValueError(f"tl.dot_scaled: lhs has K = {A.shape[-1]}, rhs K = {B.shape[-2]} after unpacking")
    with np.errstate(invalid="ignore", over="ignore"):
        D = np.matmul(A.astype(np.float32), B.astype(np.float32))
        if not none(acc):
            D = D + np.asarray(acc.handle.data, np.float32)
    D = np.asarray(D, np.float32)
    return tl.tensor(ti.TensorHandle(D, tl.float32), tl.block_type(tl.float32, list(D.shape)))


def _precision_name(p) -> str:
    if isinstance(p, str):
        return p.lower()
    name = getattr(p, "name", None) or str(p).split(".")[-1]
    return name.lower()


def _index(self):
    """tensor.__index__ that numpy 2.4 accepts: the interpreter keeps scalars as 1-element arrays."""
    data = np.asarray(self.handle.data)
    if data.size != 1:
        raise TypeError(f"only a scalar tensor can be used as an index, got shape {data.shape}")
    return int(data.reshape(()))


def _install():
    import triton.runtime.interpreter as ti
    from triton.runtime.jit import JITFunction

    _saved["create_dot"] = ti.InterpreterBuilder.create_dot
    _saved["dot_scaled"] = ti.TritonSemantic.dot_scaled
    _saved["patch_lang_tensor"] = ti._patch_lang_tensor
    _saved["grid_call"] = ti.GridExecutor.__call__
    _saved["jit_run"] = JITFunction.run
    _saved["env"] = os.environ.get("TRITON_INTERPRET")
    orig_plt, orig_call = ti._patch_lang_tensor, ti.GridExecutor.__call__

    def patch_lang_tensor(tensor, scope):
        orig_plt(tensor, scope)
        scope.set_attr(tensor, "__index__", _index)

    def grid_call(self, *args, **kwargs):
        prev = getattr(_state, "launch_num_warps", None), getattr(_state, "launch", None)
        _state.launch_num_warps = kwargs.get("num_warps")
        _state.launch = (getattr(self.fn, "__name__", "kernel"), next(_launch_ids))
        try:
            return orig_call(self, *args, **kwargs)
        finally:
            _state.launch_num_warps, _state.launch = prev

    def jit_run(self, *args, grid, warmup, **kwargs):
        # a kernel decorated before TRITON_INTERPRET was set: run its Python source in the interpreter
        return ti.InterpretedFunction(self.fn).run(*args, grid=grid, warmup=warmup, **kwargs)

    ti.InterpreterBuilder.create_dot = _exact_create_dot
    ti.TritonSemantic.dot_scaled = _exact_dot_scaled
    # an fp8 dot without max_num_imprecise_acc reaches create_dot as None (the compiler's own default),
    # not as the interpreter's 0, which a kernel may also pass explicitly (it selects mma.sync on sm_90a)
    _saved["options"] = ti.interpreter_builder.options
    ti.interpreter_builder.options = dataclasses.replace(ti.interpreter_builder.options, max_num_imprecise_acc_default=None)
    ti._patch_lang_tensor = patch_lang_tensor
    ti.GridExecutor.__call__ = grid_call
    JITFunction.run = jit_run
    os.environ["TRITON_INTERPRET"] = "1"


def _uninstall():
    import triton.runtime.interpreter as ti
    from triton.runtime.jit import JITFunction

    ti.InterpreterBuilder.create_dot = _saved["create_dot"]
    ti.TritonSemantic.dot_scaled = _saved["dot_scaled"]
    ti.interpreter_builder.options = _saved["options"]
    ti._patch_lang_tensor = _saved["patch_lang_tensor"]
    ti.GridExecutor.__call__ = _saved["grid_call"]
    JITFunction.run = _saved["jit_run"]
    if _saved["env"] is None:
        os.environ.pop("TRITON_INTERPRET", None)
    else:
        os.environ["TRITON_INTERPRET"] = _saved["env"]
    _saved.clear()


class _Counter:
    def __init__(self):
        self.n = 0

    def __next__(self):
        self.n += 1
        return self.n


_launch_ids = _Counter()


def _config(arch, device, num_warps, path, fallback):
    _check_target(arch)
    if device is not None and device not in _NUMERICS_ARCH:
        raise ValueError(f"device {device!r} is not modelled; allowed: {', '.join(TARGETS)}")
    if path not in PATHS:
        raise ValueError(f"path {path!r}: allowed {', '.join(PATHS)}")
    if num_warps is not None and (not isinstance(num_warps, int) or num_warps < 1 or num_warps & (num_warps - 1)):
        raise ValueError(f"num_warps {num_warps!r}: a power of two (1, 2, 4, 8, ...) or None (the launch's)")
    if fallback not in (None, "numpy"):
        raise ValueError(f"fallback {fallback!r}: allowed None (unmodelled dots raise) or 'numpy' (the interpreter's own)")
    return _Config(arch, device, num_warps, path, fallback)


def _push(cfg):
    with _lock:
        if not _installed:
            _install()
        _installed.append(cfg)


def _pop(cfg):
    with _lock:
        _installed.remove(cfg)
        if not _installed:
            _uninstall()


class exact(contextlib.ContextDecorator):
    """Run interpreted Triton kernels with ``tl.dot`` as the kernel compiled for ``arch`` computes it.

    ``with warpsim.triton.exact(arch="sm_90a"): kernel[grid](...)``, or ``@warpsim.triton.exact(...)`` on a
    function.  arch: the Triton target ("sm_80", "sm_86", "sm_89", "sm_90a"); device: the GPU that runs the
    compiled code when it is not arch's own (e.g. arch="sm_80", device="sm_90a": the sm_80 lowering on an
    H100); num_warps: pins the launch's num_warps for the lowering rule (default: the launch's, else 4);
    path: "auto" (Triton's rule), "mma" or "wgmma" (pinned); fallback="numpy": dots that are not modelled
    run as the interpreter's own numpy matmul instead of raising NotImplementedError, and ``tl.dot_scaled``
    (never modelled; Triton's interpreter has none) as a float32 numpy product of the scaled operands.

    Example (interpreted: a ``@triton.jit`` kernel, torch tensors on the CPU):

    >>> import torch, triton, triton.language as tl
    >>> @triton.jit
    ... def dot16(a_ptr, b_ptr, c_ptr):
    ...     i = tl.arange(0, 16)
    ...     a = tl.load(a_ptr + i[:, None] * 16 + i[None, :])
    ...     b = tl.load(b_ptr + i[:, None] * 16 + i[None, :])
    ...     tl.store(c_ptr + i[:, None] * 16 + i[None, :], tl.dot(a, b))
    >>> a, b = torch.full((16, 16), 1 / 3, dtype=torch.float16), torch.eye(16, dtype=torch.float16)
    >>> c = torch.empty(16, 16)
    >>> with warpsim.triton.exact(arch="sm_90a"), warpsim.triton.record() as dots:
    ...     dot16[(1,)](a, b, c)
    >>> dots[0]["lowering"].instruction, c[0, 0].item()
    ('mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32', 0.333251953125)
    """

    def __init__(self, arch="sm_90a", *, device=None, num_warps=None, path="auto", fallback=None):
        self.cfg = _config(arch, device, num_warps, path, fallback)

    def __enter__(self):
        _push(self.cfg)
        return self

    def __exit__(self, *exc):
        _pop(self.cfg)
        return False


_global: list = []


def enable(arch="sm_90a", *, device=None, num_warps=None, path="auto", fallback=None):
    """Switch exact ``tl.dot`` on until :func:`disable` (sets TRITON_INTERPRET=1 for kernels defined later).

    Example:

    >>> warpsim.triton.enable(arch="sm_80")      # every interpreted tl.dot as sm_80's compiled kernel, until disable()
    >>> warpsim.triton.disable()
    """
    cfg = _config(arch, device, num_warps, path, fallback)
    disable()
    _push(cfg)
    _global.append(cfg)


def disable():
    """Undo :func:`enable` (a no-op when it is not on).

    Example:

    >>> warpsim.triton.enable(arch="sm_89")
    >>> warpsim.triton.disable()
    >>> warpsim.triton.disable()                 # a no-op now
    """
    while _global:
        _pop(_global.pop())


@contextlib.contextmanager
def record():
    """Collect every exact ``tl.dot`` run inside: yields a list of dicts (lowering, a, b, c, d, types, launch).

    Example (see :class:`exact` for a kernel whose dot it records):

    >>> with warpsim.triton.record() as dots:
    ...     pass                                   # run interpreted kernels here
    >>> dots
    []
    """
    global _records
    prev, _records = _records, []
    try:
        yield _records
    finally:
        out, _records = _records, prev
        if prev is not None:
            prev.extend(out)


def recorded():
    """The list that an enclosing :func:`record` fills, or None.

    Example:

    >>> warpsim.triton.recorded() is None
    True
    >>> with warpsim.triton.record() as dots:
    ...     warpsim.triton.recorded() is dots
    True
    """
    return _records
