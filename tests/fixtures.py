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
