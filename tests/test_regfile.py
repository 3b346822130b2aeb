import re

import numpy as np
import pytest

import warpsim
from fixtures import catalog_entries
from warpsim.hw.inputs import distributions, generate
from warpsim.ptx.regfile import PTXError, Warp, example_statement, register_bits



def _operand_regs(stmt):
    groups = re.findall(r"\{([^}]*)\}", stmt)
    return [[r.strip() for r in g.split(",")] for g in groups]   # d, a, b, c


def _load(w, regs, words):
    """Put (warps, 32, words) into the named registers (64-bit registers take two words, low first)."""
    i = 0
    for r in regs:
        if register_bits(r) == 64:
            w.set(r, words[..., i].astype(np.uint64) | (words[..., i + 1].astype(np.uint64) << np.uint64(32)))
            i += 2
        else:
            w.set(r, words[..., i])
            i += 1
    assert i == words.shape[-1]


def _read(w, regs):
    cols = []
    for r in regs:
        v = w.get(r)
        if v.dtype == np.uint64:
            cols += [(v & np.uint64(0xFFFFFFFF)).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)]
        else:
            cols.append(v)
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("ins,selector", list(catalog_entries()))
def test_run_matches_mma_for_every_catalog_entry(ins, selector):
    g = generate(ins, selector, distributions(ins)[0], 2, 7)
    want = warpsim.mma(ins.opcode, g["a"], g["b"], g["c"], g.get("e"), selector=selector)
    stmt = example_statement(ins, selector)
    d, a, b, c = _operand_regs(stmt)
    w = Warp(2)
    for regs, role in ((a, "a"), (b, "b"), (c, "c")):
        _load(w, regs, g[role])
    if ins.is_sparse:
        meta = re.search(r"\}, (%r\d+), 0x", stmt).group(1)
        w.set(meta, g["e"])
    w.run("// generated\n" + stmt)
    assert _read(w, d).dtype == np.uint32
    assert (_read(w, d) == want).all()
    for regs, role in ((a, "a"), (b, "b"), (c, "c")):   # inputs untouched
        assert (_read(w, regs) == g[role]).all()


def test_docstring_example_and_chaining():
    w = Warp()
    out = w.run("""
        mov.b32 %r0, 0x01010101;   // A
        mov.u32 %r2, 0x02020202;
        mov.s32 %r3, 0;
        mov.b32 %r4, %r3;
        mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r5,%r6}, {%r0}, {%r2}, {%r3,%r4};
    """)
    assert out is w
    assert (w.get("%r5") == 32).all() and (w.get("%r6") == 32).all()
    assert w.get("%r5").shape == (1, 32) and w.get("%r5").dtype == np.uint32


def test_multiple_statements_comments_and_aliasing():
    w = Warp(3)
    w.set("%r1", np.arange(32, dtype=np.uint32))
    w.run("""
        /* block comment ; with a semicolon
           over lines */
        .reg .b32 %r<10>;
        mov.b32 %r0, 0x01010101; mov.b32 %r2, 0;   // two on one line

        mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r2,%r3}, {%r0}, {%r0}, {%r2,%r2};
        mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r2,%r3}, {%r0}, {%r0}, {%r2,%r3};
    """)
    assert (w.get("%r2") == 32).all() and (w.get("%r3") == 32).all()
    assert w.get("%r2").shape == (3, 32)


def test_mov_forms():
    w = Warp()
    w.run("""
        mov.f32 %f0, 0f3F800000;
        mov.f32 %f1, 1.5;
        mov.f32 %f2, -0f3F800000;
        mov.b32 %r0, -1;
        mov.b32 %r1, %laneid;
        mov.b64 %rd0, 0x123456789abcdef0;
        mov.f64 %fd0, 0d3FF0000000000000;
        mov.f64 %fd1, 2.5;
        mov.b64 %rd1, %rd0;
        mov.u32 %r2, 0b101;
    """)
    assert (w.get("%f0") == 0x3F800000).all()
    assert (w.get("%f1") == np.float32(1.5).view(np.uint32)).all()
    assert (w.get("%f2") == 0xBF800000).all()
    assert (w.get("%r0") == 0xFFFFFFFF).all()
    assert (w.get("%r1")[0] == np.arange(32)).all()
    assert w.get("%rd0").dtype == np.uint64 and (w.get("%rd1") == 0x123456789ABCDEF0).all()
    assert (w.get("%fd0") == np.float64(1.0).view(np.uint64)).all()
    assert (w.get("%fd1") == np.float64(2.5).view(np.uint64)).all()
    assert (w.get("%r2") == 5).all()


def test_set_get_conversions():
    w = Warp(2)
    w.set("%f0", np.float32(2.0))
    assert (w.get("%f0") == 0x40000000).all()
    w.set("%fd3", np.full(32, -1.0))
    assert (w.get("%fd3") == np.float64(-1.0).view(np.uint64)).all()
    w.set("%r7", -2)
    assert (w.get("%r7") == 0xFFFFFFFE).all()
    g = w.get("%r7")
    g[:] = 0
    assert (w.get("%r7") == 0xFFFFFFFE).all()          # get returns a copy
    with pytest.raises(ValueError, match="broadcast"):
        w.set("%r1", np.zeros(31, np.uint32))
    with pytest.raises(ValueError, match="32-bit"):
        w.set("%r1", 1 << 32)
    with pytest.raises(TypeError, match="float32"):
        w.set("%r1", np.float64(1.0))
    with pytest.raises(PTXError, match="not a register name"):
        w.set("r1", 0)
    with pytest.raises(PTXError, match="before it is defined"):
        w.get("%r99")
    assert "%r7" in w and w.names == ["%f0", "%fd3", "%r7"]


def test_undefined_policies():
    stmt = "mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r5,%r6}, {%r1}, {%r2}, {%r3,%r4};"
    Warp(undefined="zero").run(stmt)
    a = Warp(undefined="random", seed=1).run(stmt).get("%r5")
    b = Warp(undefined="random", seed=1).run(stmt).get("%r5")
    assert (a == b).all()
    with pytest.raises(ValueError):
        Warp(undefined="maybe")
    with pytest.raises(ValueError):
        Warp(0)


S8 = "mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32"
SP = "mma.sp.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"
F64 = "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"


def _err(text, **kw):
    w = Warp(**kw)
    w.set("%r1", 0)
    w.set("%r2", 0)
    w.set("%r3", 0)
    w.set("%r4", 0)
    with pytest.raises(PTXError) as ei:
        w.run(text)
    assert isinstance(ei.value, ValueError)
    return ei.value


def test_error_unknown_opcode_reuses_parse_message():
    e = _err("\n\nmma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s33 {%r5,%r6}, {%r1}, {%r2}, {%r3,%r4};")
    assert e.line == 3
    assert "unknown type '.s33'" in str(e)
    assert e.token == "mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s33"
    assert "^^^" in str(e)
    e = _err("mma.sync.aligned.m8n8k16.row.col.f32.s8.s8.s32 {%r5,%r6}, {%r1}, {%r2}, {%r3,%r4};")
    assert "D type .f32 is not allowed" in str(e) and "Closest opcodes" in str(e)


def test_error_operand_counts():
    e = _err(f"{S8} {{%r5}}, {{%r1}}, {{%r2}}, {{%r3,%r4}};")
    assert "operand D" in str(e) and "needs 2 register(s), got 1" in str(e)
    assert "D 2, A 1, B 1, C 2" in str(e) and e.token == "{%r5}"
    e = _err(f"{S8} {{%r5,%r6}}, {{%r1}}, {{%r2}};")
    assert "takes 4 operands" in str(e) and "got 3" in str(e)
    e = _err(f"{SP} {{%r5,%r6,%r7,%r8}}, {{%r1,%r2}}, {{%r1,%r2}}, {{%r3,%r3,%r3,%r3}};")
    assert "takes 6 operands" in str(e) and "metadata register, sparsity selector" in str(e)
    e = _err(f"{SP} {{%r5,%r6,%r7,%r8}}, {{%r1,%r2}}, {{%r1,%r2}}, {{%r3,%r3,%r3,%r3}}, %r4, 0x2;")
    assert "selector 0x2 is out of range" in str(e) and "[0, 1]" in str(e)
    e = _err(f"{SP} {{%r5,%r6,%r7,%r8}}, {{%r1,%r2}}, {{%r1,%r2}}, {{%r3,%r3,%r3,%r3}}, %r4, %r1;")
    assert "integer immediate" in str(e)


def test_error_undefined_register_names_line_and_token():
    e = _err(f"mov.b32 %r5, 1;\n{S8} {{%r5,%r6}}, {{%r1}}, {{%r9}}, {{%r3,%r4}};")
    assert e.line == 2 and e.token == "%r9" and "used before it is defined" in str(e)
    assert "line 2" in str(e)


def test_error_register_width():
    e = _err(f"{F64} {{%fd0,%fd1}}, {{%r1}}, {{%fd2}}, {{%fd3,%fd4}};")
    assert "64-bit register" in str(e) and e.token == "%r1" and "operand A (.f64)" in str(e)
    e = _err(f"{S8} {{%rd5,%r6}}, {{%r1}}, {{%r2}}, {{%r3,%r4}};")
    assert "32-bit register" in str(e) and e.token == "%rd5"
    e = _err("mov.b32 %r0, %rd1;")
    assert "source of mov.b32" in str(e)
    e = _err("mov.b64 %r0, 1;")
    assert "destination of mov.b64" in str(e)


def test_error_syntax():
    assert "unsupported instruction 'tex.1d.v4.s32.s32'" in str(_err("tex.1d.v4.s32.s32 {%r1,%r2,%r3,%r4}, [t, {%r1}];"))
    assert "terminating ';'" in str(_err("mov.b32 %r1, 1"))
    assert "unterminated /*" in str(_err("/* oops"))
    assert "predicate" in str(_err("@%r1 mov.b32 %r1, 1;"))            # a guard must be a predicate register
    assert "not a register or an immediate" in str(_err("mov.b32 %r1, banana;"))
    assert "does not fit" in str(_err("mov.b32 %r1, 0x100000000;"))
    assert "unsupported mov form" in str(_err("mov.f16 %r1, 1;"))


def test_f64_statement_words_are_split_low_first():
    ins = warpsim.parse(F64)
    g = generate(ins, 0, "normal", 1, 3)
    w = Warp()
    for role, regs in (("a", ["%fd1"]), ("b", ["%fd2"]), ("c", ["%fd3", "%fd4"])):
        _load(w, regs, g[role])
    want = warpsim.mma(F64, g["a"], g["b"], g["c"])
    w.run(f"{F64} {{%fd5,%fd6}}, {{%fd1}}, {{%fd2}}, {{%fd3,%fd4}};")
    assert (_read(w, ["%fd5", "%fd6"]) == want).all()
