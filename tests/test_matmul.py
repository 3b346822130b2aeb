import numpy as np
import pytest

import warpsim
from fixtures import catalog_entries
from warpsim.isa.catalog import CATALOG
from warpsim.hw.inputs import distributions, generate



@pytest.mark.parametrize("ins,selector", list(catalog_entries()))
def test_matmul_matches_mma_for_every_catalog_entry(ins, selector):
    g = generate(ins, selector, distributions(ins)[0], 2, 11)
    want = warpsim.mma(ins.opcode, g["a"], g["b"], g["c"], g.get("e"), selector=selector)
    mats = {r: warpsim.unpack(ins, r, g[r]) for r in "abc"}
    if ins.is_sparse:
        # compressed A + the generator's metadata, exactly the same register words
        d = warpsim.matmul(ins.opcode, mats["a"], mats["b"], mats["c"], metadata=g["e"], selector=selector)
        # logical A: expand, then matmul recompresses it (possibly with other metadata for zero elements)
        logical = warpsim.expand(ins, g["a"], g["e"], selector)
        assert logical.shape == (2, ins.m, ins.k)
        aw, e = warpsim.compress(ins, logical, selector)
        assert (warpsim.expand(ins, aw, e, selector).view(np.uint8) == logical.view(np.uint8)).all()
        if ins.elem("a").kind == "int":
            d2 = warpsim.matmul(ins.opcode, logical, mats["b"], mats["c"], selector=selector)
            assert (warpsim.pack(ins, "d", d2) == want).all()
    else:
        d = warpsim.matmul(ins.opcode, mats["a"], mats["b"], mats["c"])
    assert d.dtype == ins.elem("d").numpy_dtype
    assert (warpsim.pack(ins, "d", d) == want).all()


def _sparsify(rng, A, us=1):
    m, k = A.shape[-2:]
    g = A.reshape(A.shape[:-2] + (m, k // (4 * us), 4, us))
    for idx in np.ndindex(g.shape[:-2]):
        g[idx][rng.choice(4, rng.integers(2, 5), replace=False)] = 0
    return g.reshape(A.shape)


@pytest.mark.parametrize("ins", [i for i in CATALOG if i.is_sparse and i.elem("a").kind == "int"], ids=lambda i: i.opcode)
def test_sparse_integer_matmul_equals_reference(ins):
    rng = np.random.default_rng(5)
    ta, tb = ins.elem("a"), ins.elem("b")
    A = _sparsify(rng, rng.integers(ta.min_int, ta.max_int + 1, size=(2, ins.m, ins.k)), 2 if ta.bits == 4 else 1)
    B = rng.integers(tb.min_int, tb.max_int + 1, size=(2, ins.k, ins.n))
    C = rng.integers(-10**6, 10**6, size=(2, ins.m, ins.n))
    for s in ins.selectors:
        D = warpsim.matmul(ins.opcode, A.astype(ta.numpy_dtype), B.astype(tb.numpy_dtype), C.astype(np.int32), selector=s)
        assert (D == A @ B + C).all()
        aw, e = warpsim.compress(ins, A, s)
        assert (warpsim.expand(ins, aw, e, s) == A).all()


def test_dense_integer_matmul_reference_batch_broadcast_and_default_c():
    op = "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32"
    rng = np.random.default_rng(0)
    A = rng.integers(-128, 128, size=(4, 16, 32)).astype(np.int8)
    B = rng.integers(0, 256, size=(32, 8)).astype(np.uint8)       # no batch axis: shared by all 4
    D = warpsim.matmul(op, A, B)
    assert D.shape == (4, 16, 8) and D.dtype == np.int32
    assert (D == A.astype(np.int64) @ B).all()
    one = warpsim.matmul(op, A[1], B, np.ones((16, 8), np.int32))
    assert one.shape == (16, 8) and (one == D[1] + 1).all()


def test_satfinite_and_b1():
    rng = np.random.default_rng(1)
    op = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"
    A = np.full((16, 32), 127, np.int8)
    D = warpsim.matmul(op, A, A.T.copy()[:, :8], np.full((16, 8), 2**31 - 10, np.int32))
    assert (D == 2**31 - 1).all()
    b1 = "mma.sync.aligned.m16n8k128.row.col.s32.b1.b1.s32.and.popc"
    A = rng.integers(0, 2, size=(16, 128)).astype(np.uint8)
    B = rng.integers(0, 2, size=(128, 8)).astype(np.uint8)
    assert (warpsim.matmul(b1, A, B) == A.astype(np.int64) @ B).all()


def test_quad_pair_products_axis():
    op = "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32"
    rng = np.random.default_rng(2)
    A = rng.integers(-4, 5, size=(4, 8, 4)).astype(np.float16)
    B = rng.integers(-4, 5, size=(4, 4, 8)).astype(np.float16)
    D = warpsim.matmul(op, A, B)
    assert D.shape == (4, 8, 8)
    assert (D == A.astype(np.float32) @ B.astype(np.float32)).all()   # small integers: exact
    with pytest.raises(ValueError, match="products|shape"):
        warpsim.matmul(op, A[0], B[0])


def test_sparse_errors_name_row_and_group():
    sp = "mma.sp.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"
    A = np.zeros((16, 32), np.int8)
    A[5, 8:11] = 1
    with pytest.raises(ValueError, match=r"row 5, group 2 \(columns 8..11\) has 3 nonzero elements"):
        warpsim.matmul(sp, A, np.zeros((32, 8), np.int8))
    with pytest.raises(ValueError, match=r"matrix 1, row 5, group 2"):
        warpsim.compress(sp, np.stack([np.zeros_like(A), A]))
    tf = "mma.sp.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
    At = np.zeros((16, 8), np.float32)
    At[2, 6:8] = 1.0
    with pytest.raises(ValueError, match=r"1:2 .*row 2, group 3 \(columns 6..7\)"):
        warpsim.compress(tf, At)
    i4 = "mma.sp.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32"
    A4 = np.zeros((16, 64), np.int8)
    A4[0, [0, 2, 4]] = 1                                  # three nonzero pairs in the first group of four pairs
    with pytest.raises(ValueError, match=r"pairs.*row 0, group 0 \(columns 0..7\)"):
        warpsim.compress(i4, A4)
    with pytest.raises(ValueError, match="compressed form"):
        warpsim.compress(sp, np.zeros((16, 16), np.int8))
    with pytest.raises(ValueError, match="dense"):
        warpsim.compress("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", A)
    with pytest.raises(ValueError, match="selector 2 is out of range"):
        warpsim.compress(sp, np.zeros((16, 32), np.int8), 2)
    with pytest.raises(ValueError, match="dense"):
        warpsim.matmul("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", A, np.zeros((32, 8), np.int8),
                       metadata=np.zeros(32, np.uint32))


def test_expand_rejects_repeated_indices_and_metadata_layout():
    sp = "mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    aw = np.zeros((32, 2), np.uint32)
    with pytest.raises(ValueError, match="twice"):
        warpsim.expand(sp, aw, np.zeros(32, np.uint32))
    # an all-zero matrix compresses to the canonical nibble 0b0100 in the lanes the selector reads
    for s in (0, 1, 2, 3):
        _, e = warpsim.compress(sp, np.zeros((16, 16), np.float16), s)
        read = np.nonzero(e)[0]
        assert len(read) == 8 and (read % 4 == s).all()
        assert (e[read] == 0x44444444).all()


def test_tf32_sparse_uses_valid_nibbles():
    tf = "mma.sp.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32"
    rng = np.random.default_rng(3)
    A = rng.standard_normal((16, 16)).astype(np.float32)
    A.reshape(16, 8, 2)[np.arange(16)[:, None], np.arange(8), rng.integers(0, 2, size=(16, 8))] = 0
    aw, e = warpsim.compress(tf, A, 1)
    assert (warpsim.expand(tf, aw, e, 1) == A).all()
    nibbles = {(int(w) >> s) & 0xF for w in e[e != 0] for s in range(0, 32, 4)}
    assert nibbles <= {0b0100, 0b1110}
