"""Opcode fixtures shared by the parser and ptxas tests (QEMU decodetree style: accepted and rejected)."""

# opcode that PTX forbids -> (a catalog opcode with the same operand registers, words the error must contain)
REJECTED = {
    "mma.sync.aligned.m16n8k16.row.col.satfinite.f32.f16.f16.f32": ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "without .satfinite"),
    "mma.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32": ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", ".row.col"),
    "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f32": ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32", "D type .f16"),
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.bf16.f32": ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "is not allowed"),
    "mma.sync.aligned.m16n8k16.row.col.f16.bf16.bf16.f16": ("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", "Closest"),
    "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32": ("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc", ".xor.popc"),
    "mma.sp.sync.aligned.m16n8k64.row.col.f16.e4m3.e4m3.f16": ("mma.sp.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32", "Closest"),
    "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f32": ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "Closest"),
    "mma.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32": ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "Closest"),
    "mma.sync.aligned.m16n8k16.row.col.satfinite.f32.e4m3.e4m3.f32": ("mma.sync.aligned.m16n8k16.row.col.f32.e4m3.e4m3.f32", "without .satfinite"),
    "mma.sync.aligned.m8n8k16.row.col.s32.s4.s4.s32": ("mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32", "Closest"),
}

# malformed text: (opcode, words the error must contain)
MALFORMED = [
    ("foo.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "must start with 'mma'"),
    ("mma.m16n8k16.row.col.f32.f16.f16.f32", ".sync.aligned"),
    ("mma.sync.aligned.m16n8k9.row.col.f32.f16.f16.f32", "unknown shape"),
    ("mma.sync.aligned.m16n8k16.row.f32.f16.f16.f32", "layouts"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f17.f16.f32", "unknown type"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16", "four types"),
    ("mma.sp::unordered.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "unknown sparse form"),
    ("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.or.popc", "unknown qualifier '.or'"),
]


def ptx_kernel(target: str, decls: tuple, body: str) -> str:
    """The text of a one-parameter PTX kernel ``k(.param .u64 P)`` for ``target``: its declarations
    (``decls``, one a line) then ``body`` (statements, one a line)."""
    lines = "".join(f"  {d}\n" for d in decls)
    return (f"\n.version 8.8\n.target {target}\n.address_size 64\n.visible .entry k(.param .u64 P)\n{{\n{lines}"
            f"{body.strip(chr(10))}\n}}\n")


def wgmma_register_program(op, a_src, sa, sb, ta, tb, d, a, b, kw, sel=None):
    """A Warpgroup holding one wgmma call's registers and shared memory (as the corpus call gives
    them: d, a, b and kw's smem / scale_d / e), and the PTX that runs it: (group, D registers, text).
    a_src "reg": A in registers, else a descriptor; sel: the sparsity selector (None: dense)."""
    import numpy as np

    import warpsim

    ins = warpsim.parse(op)
    g = warpsim.Warpgroup(d.shape[0], smem_bytes=kw["smem"].shape[1])
    g.smem[:] = kw["smem"]
    pre = "%f" if ins.dtype == "f32" else "%r"
    dregs = [f"{pre}{i}" for i in range(ins.words("d"))]
    for i, r in enumerate(dregs):
        g.set(r, d[..., i])
    if a_src == "reg":
        aregs = [f"%r{200 + i}" for i in range(ins.words("a"))]
        for i, r in enumerate(aregs):
            g.set(r, a[..., i])
        a_txt = "{" + ", ".join(aregs) + "}"
    else:
        g.set("%rd0", a[:, None])
        a_txt = "%rd0"
    g.set("%rd1", b[:, None])
    if sel is None:
        g.set("%p0", kw["scale_d"][:, None])
        meta = ""
    else:
        g.set("%e0", kw["e"])
        g.set("%p0", kw["scale_d"].astype(np.uint32)[:, None])
        meta = f"%e0, {sel}, "
    imms = ([sa, sb] if ins.imm_scale else []) + (([ta] if a_src == "desc" else []) + [tb] if ins.imm_trans else [])
    text = f"""
        wgmma.fence.sync.aligned;
        {op} {{{', '.join(dregs)}}}, {a_txt}, %rd1, {meta}%p0{''.join(', ' + x for x in imms)};
        wgmma.commit_group.sync.aligned;
        wgmma.wait_group.sync.aligned 0;
    """
    return g, dregs, text


def catalog_entries():
    """pytest params (instruction, selector) of every catalog mma entry but the sm_120a kind:: forms
    (those: tests/test_blackwell.py)."""
    import pytest

    from warpsim.isa.catalog import CATALOG

    for ins in CATALOG:
        if ins.targets:
            continue
        for s in ins.selectors:
            yield pytest.param(ins, s, id=f"{ins.opcode}:{s}")
