"""Whole-GEMM capture kernels: a plain tiled ``mma`` main loop, generated from the catalog.

One warp per m x n output tile walks K in order, the D registers of each ``mma`` being the C registers
of the next -- the chain :func:`warpsim.gemm` models.  The host packs every tile's operands into
register words with the fragment layouts (:func:`pack_tiles`) and unpacks D again
(:func:`unpack_tiles`); nothing about an instruction is written here by hand.  ``promote`` > 0
(f32 accumulators) adds every ``promote`` instructions' partial, chained from zero, into a main
accumulator started from C with one ``__fadd_rn`` per element: ``warpsim.gemm(...,
promote_every=promote * k)``, and serial split-K.  ``warpsim/hw/offline/gemm_capture.md`` drives it on a GPU.
"""

from __future__ import annotations

import numpy as np

from ..isa.sparse_matrix import compress
from ..isa.bits import words_to_elements
from ..isa.catalog import BY_OPCODE
from ..isa.codec import to_values
from ..isa.layouts import layout
from .capture import _operands, asm_operands, asm_statement, load_registers, store_registers
from .inputs import _pack_raw


def pack_tiles(opcode, A, B, C, selector=0):
    """Raw element bits A (M, K), B (K, N), C (M, N) -> register words per tile and k step:
    a (M/m * K/k, 32, wa) in (tile row, step) order, b (N/n * K/k, 32, wb) in (tile column, step)
    order, c (M/m * N/n, 32, wc), e (M/m * K/k, 32) metadata (sparse; A is then the logical 2:4
    matrix, compressed as warpsim.compress does) or a (1, 32) dummy."""
    ins = BY_OPCODE[opcode]
    m, n, k = ins.mnk
    M, K = A.shape
    N = B.shape[1]
    Tm, Tn, S = M // m, N // n, K // k
    A = np.asarray(A).reshape(Tm, m, S, k).transpose(0, 2, 1, 3).reshape(Tm * S, m, k)
    B = np.asarray(B).reshape(S, k, Tn, n).transpose(2, 0, 1, 3).reshape(Tn * S, k, n)
    C = np.asarray(C).reshape(Tm, m, Tn, n).transpose(0, 2, 1, 3).reshape(Tm * Tn, m, n)
    if ins.is_sparse:
        aw, e = compress(ins.opcode, to_values(A.astype(np.uint64), ins.elem("a")), selector)
    else:
        aw = _pack_raw(ins, "a", A[:, None])
        e = np.zeros((1, 32), np.uint32)
    return dict(a=aw, b=_pack_raw(ins, "b", B[:, None]), c=_pack_raw(ins, "c", C[:, None]), e=e, Tm=Tm, Tn=Tn, S=S)


def unpack_tiles(opcode, d, Tm, Tn):
    """D words (Tm * Tn, 32, wd) of the tiles -> the raw bits of D (Tm * m, Tn * n), uint64."""
    ins = BY_OPCODE[opcode]
    m, n, _ = ins.mnk
    el = words_to_elements(d, ins.elem("d").bits)
    tab = layout(ins.opcode, "d")
    T = np.zeros((Tm * Tn, m, n), np.uint64)
    T[:, tab[..., 1], tab[..., 2]] = el
    return T.reshape(Tm, Tn, m, n).transpose(0, 2, 1, 3).reshape(Tm * m, Tn * n)


def gemm_kernel_source(cases) -> str:
    """One kernel per case: a warp per m x n output tile walks K in order, D of each mma the next C.
    promote > 0 (f32 accumulators only): every `promote` steps the partial (chained from zero) is added
    into the main accumulator (started from C) with one __fadd_rn per element."""
    out = ["// generated: tiled mma GEMM capture kernels", ""]
    for idx, (op, sel, promote) in enumerate(cases):
        ins = BY_OPCODE[op]
        w = {r: ins.words(r) for r in "abcd"}
        body = ["  int t = blockIdx.x * blockDim.x + threadIdx.x;", "  int g = t >> 5, lane = t & 31;",
                "  if (g >= Tm * Tn) return;", "  int tm = g / Tn, tn = g % Tn;"]
        cn, ck = _operands(ins, "c")
        dn, dk = _operands(ins, "d")
        ctype = "double" if ck == "d" else "unsigned"
        body += load_registers(cn, ck, lambda j: f"C[(g*32+lane)*{w['c']}+{j}]", "  ")
        if promote:
            assert ins.dtype == "f32"
            for i, nm in enumerate(cn):
                body.append(f"  float f{i} = __uint_as_float({nm}); {nm} = 0u;")
        body.append("  for (int s = 0; s < S; ++s) {")
        for role, base in (("a", "(tm*S+s)"), ("b", "(tn*S+s)")):
            names, kind = _operands(ins, role)
            src = role.upper()
            body += load_registers(names, kind, lambda j: f"{src}[({base}*32+lane)*{w[role]}+{j}]", "    ")
        body.append(f"    {ctype} " + ", ".join(dn) + ";")
        lines, groups, ops, ins_ops, tail, _ = asm_operands(ins, sel, "E[(tm*S+s)*32+lane]", "    ")
        body += lines
        body.append(asm_statement(ins, groups, tail, ops, ins_ops, "    "))
        for c_, d_ in zip(cn, dn):
            body.append(f"    {c_} = {d_};")
        if promote:
            body.append(f"    if ((s + 1) % {promote} == 0) {{")
            for i, nm in enumerate(cn):
                body.append(f"      f{i} = __fadd_rn(f{i}, __uint_as_float({nm})); {nm} = 0u;")
            body.append("    }")
        body.append("  }")
        if promote:
            for i, nm in enumerate(cn):
                body.append(f"  {nm} = __float_as_uint(f{i});")
        body += store_registers(cn, ck, lambda j: f"D[(g*32+lane)*{w['d']}+{j}]", "  ")
        out.append(f"// case {idx}: {op} selector {sel} promote {promote}")
        out.append(f'extern "C" __global__ void warpsim_gemm_{idx}(const unsigned* __restrict__ A, const unsigned* __restrict__ B, '
                   "const unsigned* __restrict__ C, const unsigned* __restrict__ E, unsigned* __restrict__ D, int Tm, int Tn, int S) {")
        out += body
        out.append("}")
        out.append("")
    return "\n".join(out)
