"""The compiled engine's TMA tile copies (warpsim.ptx.native.rt_tma) against Hopper captures.

Loads: the 640 boxes an H100 landed (tests/golden/tma_boxes_sm90.npz, read through
warpsim.hw.offline.tma_replay), each with the driver's own descriptor bytes.  Stores: the tensor
stores an H200 made (tests/golden/tma_stores_sm90.npz, read through tma_store_replay / tma_store_cases).
The refusals follow the faults measured there; the descriptor scan reads a CUTLASS 3 parameter blob.
"""

from pathlib import Path

import numpy as np
import pytest

from warpsim.hw.golden import open_golden
from warpsim.hw.offline import tma_replay
from warpsim.hw.offline.tma_store_replay import Capture, initial
from warpsim.hw.tma_store_cases import WINDOW, data_bytes
from warpsim.isa.tensormap import Im2colMap, decode_tensormap, encode_tiled, make_tensormap, replace_field
from warpsim.ptx.native import rt, rt_tma

from test_ptx_native import REPEATS_A_PATH

GOLDEN = Path(__file__).parent / "golden"
TMAP_OFFSETS = {"A": 128, "B": 384, "C": 896, "D": 1152}     # as test_hopper_kernels: CUTLASS's Params
BASE = 0x7F00_0000_0000


class Mapped:
    """Global memory as the compiled kernel sees it: uint8 arrays at device addresses, reads and writes tracked."""

    def __init__(self, *arrays_at):
        self.arrays = [a for a, _ in arrays_at]
        self.bases = np.array([addr for _, addr in arrays_at], np.uint64)
        self.sizes = np.array([a.size for a in self.arrays], np.uint64)
        self.ptrs = np.array([a.ctypes.data for a in self.arrays], np.int64)
        self.toff = np.zeros(max(1, len(self.arrays)), np.int64)
        self.toff[1:len(self.arrays)] = np.cumsum(self.sizes)[:-1]
        self.trk = np.zeros(int(self.sizes.sum()), np.uint8)

    def copy(self, fn, f, coords, smem, offset):
        """``fn`` (rt_tma.tile_load / tile_store) on row ``f``; returns (result, status)."""
        status = np.zeros(5, np.int64)
        co = np.zeros(5, np.int64)
        co[:len(coords)] = coords
        got = fn(status, 7, 3, f, co, smem.ctypes.data, smem.size, offset, self.bases, self.sizes, self.ptrs,
                 self.trk, self.toff)
        return got, status


def test_loads_land_the_captured_h100_boxes():
    """Every box of the capture equals the window the H100 left, byte for byte (fill words, padded rows,
    swizzles, element strides, boxes over every edge), and completes the byte count the H100 did."""
    z = open_golden(GOLDEN / "tma_boxes_sm90.npz")
    ran = [i for i in range(len(z["rank"])) if tma_replay.landed(z, i)]
    assert len(ran) >= 138
    bad = []
    for i in ran:
        data, base, dst, window = tma_replay.captured_inputs(z, i)
        f = rt_tma.descriptor_fields(decode_tensormap(z["tensormap"][i]))      # the driver's bytes
        smem = np.full(max(base + window.size, dst + int(f[rt_tma.FOOTPRINT])), 0xA5, np.uint8)
        mem = Mapped((data, int(z["gaddr"][i])))
        tx, status = mem.copy(rt_tma.tile_load, f, z["coords"][i][:int(z["rank"][i])], smem, dst)
        if tx != tma_replay.hardware_tx_bytes(z, i) or not np.array_equal(smem[base:base + window.size], window):
            bad.append((i, int(tx), status.tolist()))
    assert not bad, f"{len(bad)} of {len(ran)} boxes differ: {bad[:3]}"


def _store_capture():
    cap = Capture(open_golden(GOLDEN / "tma_stores_sm90.npz"))
    return cap, [(i, c) for i, c in enumerate(cap.cases) if c["group"] == "tensor" and c["op"] == "store"]


def test_stores_write_the_captured_h200_bytes():
    """Every tensor store of the capture leaves global memory as the H200 did (16-byte granule at the far
    innermost edge, clipped boxes, swizzled sources)."""
    cap, stores = _store_capture()
    ran, bad = 0, []
    for i, c in stores:
        if cap.result[i] != 0 or not cap.has_output[i]:
            continue
        ran += 1
        data = initial(c)
        smem = np.zeros(WINDOW, np.uint8)              # the entry copies its source to `win`, shared offset 0
        smem[:c["nbytes"]] = data_bytes(c["seed"] + 1, c["nbytes"])
        mem = Mapped((data, int(cap.gaddr[i])))
        n, status = mem.copy(rt_tma.tile_store, rt_tma.descriptor_fields(decode_tensormap(cap.tensormap[i])),
                             c["coords"], smem, 0)
        if n < 0 or not np.array_equal(data, cap.gpu_bytes(i)):
            bad.append((i, int(n), status.tolist()))
    assert ran >= 20 and not bad, (ran, bad[:3])


def test_store_at_a_negative_coordinate_is_refused():
    """The capture's store probe at a negative start coordinate faulted on the H200: refused, nothing written."""
    cap, stores = _store_capture()
    probes = [(i, c) for i, c in stores if c.get("probe")]
    assert probes and all(cap.result[i] == -1 for i, _ in probes)
    for i, c in probes:
        data = np.zeros(c["gbytes"], np.uint8)
        tm = decode_tensormap(encode_tiled(c["dtype"], c["rank"], BASE, c["dims"], c["strides"], c["box"],
                                           [1] * c["rank"]))
        n, status = Mapped((data, BASE)).copy(rt_tma.tile_store, rt_tma.descriptor_fields(tm), c["coords"],
                                              np.ones(WINDOW, np.uint8), 0)
        d = next(k for k, v in enumerate(c["coords"]) if v < 0)
        assert n == -1 and status.tolist() == [rt.TMA_NEGATIVE, 7, 3, c["coords"][d], d]
        assert not data.any()


def _row(*args, **kw):
    return rt_tma.descriptor_fields(make_tensormap(*args, **kw))


def test_load_refusals_and_tracked_reads():
    """A worked 1D box: 32 bytes at coordinate 48 read bytes 48..79 (tracked as read) to shared 128..159;
    coordinate 47 (not a multiple of 16 bytes), a box past the shared allocation, a destination off 128
    bytes and an unmapped tensor are refused with their codes."""
    G = np.arange(96, dtype=np.uint8)
    f = _row("uint8", 1, BASE, (96,), (), (32,), (1,))
    mem = Mapped((G, BASE))
    smem = np.zeros(256, np.uint8)
    tx, status = mem.copy(rt_tma.tile_load, f, [48], smem, 128)
    assert tx == 32 and not status.any()
    assert (smem[128:160] == G[48:80]).all() and not smem[:128].any() and not smem[160:].any()
    assert (np.flatnonzero(mem.trk) == np.arange(48, 80)).all() and (mem.trk[48:80] == rt.READ).all()
    for coords, dst, smem_bytes, want in (([47], 0, 256, [rt.TMA_INNER, 7, 3, 47, 47]),
                                          ([48], 128, 159, [rt.TMA_SMEM_RANGE, 7, 3, 128, 160]),
                                          ([48], 64, 256, [rt.TMA_SMEM_ALIGN, 7, 3, 64, 0])):
        tx, status = mem.copy(rt_tma.tile_load, f, coords, np.zeros(smem_bytes, np.uint8), dst)
        assert tx == -1 and status.tolist() == want
    f_away = _row("uint8", 1, BASE + 4096, (96,), (), (32,), (1,))
    tx, status = mem.copy(rt_tma.tile_load, f_away, [16], smem, 0)
    assert tx == -1 and status.tolist()[:4] == [rt.BAD_ADDRESS, 7, 3, BASE + 4096 + 16]


def test_store_refusals_and_tracked_writes():
    """A worked 2D store of 16 x 2 uint16 at (40, 1) over a 45 x 3 tensor (row pitch 96 bytes): the first
    16-byte granule past the edge (elements 40..47) is written, the rest of the box row not; a store that
    runs into unmapped memory writes nothing; a source past shared memory is refused."""
    G = np.zeros(3 * 96, np.uint8)
    f = _row("uint16", 2, BASE, (45, 3), (96,), (16, 2), (1, 1))
    mem = Mapped((G, BASE))
    smem = np.arange(64, dtype=np.uint8)
    n, status = mem.copy(rt_tma.tile_store, f, [40, 1], smem, 0)
    assert n == 32 and not status.any()
    assert (G[96 + 80:96 + 96] == smem[0:16]).all() and (G[192 + 80:192 + 96] == smem[32:48]).all()
    assert np.count_nonzero(G) == 32 - 1               # smem[0] is 0
    assert (np.flatnonzero(mem.trk) == np.r_[176:192, 272:288]).all() and (mem.trk[mem.trk > 0] == rt.WRITTEN).all()
    short = Mapped((np.zeros(200, np.uint8), BASE))     # row 2 of the box lies past the array
    n, status = short.copy(rt_tma.tile_store, f, [0, 1], smem, 0)
    assert n == -1 and status.tolist()[:4] == [rt.BAD_ADDRESS, 7, 3, BASE + 192] and not short.arrays[0].any()
    n, status = mem.copy(rt_tma.tile_store, f, [0, 0], np.zeros(63, np.uint8), 0)
    assert n == -1 and status.tolist() == [rt.TMA_SMEM_RANGE, 7, 3, 0, 64]


def test_scan_finds_the_cutlass3_descriptors():
    """The four tensormaps CUTLASS put in its kernel parameters (driver-written, on an H100) are found at their
    offsets, once each however often they are passed, and find_descriptor names their rows; random bytes
    and a zeroed array hold none."""
    g = open_golden(GOLDEN / "cutlass3_sm90a.npz")
    params = np.asarray(g["0.params"]).view(np.uint8).copy()
    raw, fields = rt_tma.scan_descriptors([params, params.tobytes(), np.zeros(1 << 16, np.uint8)])
    want = [params[o:o + 128] for o in TMAP_OFFSETS.values()]
    assert len(raw) == 4 and {r.tobytes() for r in raw} == {w.tobytes() for w in want}
    for name, o in TMAP_OFFSETS.items():
        k = rt_tma.find_descriptor(raw, params.ctypes.data + o)
        assert raw[k].tobytes() == params[o:o + 128].tobytes()
        tm = decode_tensormap(params[o:o + 128])
        assert fields[k, rt_tma.ADDRESS] == tm.global_address and fields[k, rt_tma.RANK] == 3
        assert fields[k, rt_tma.SWIZZLE_SPAN] == 128 and fields[k, rt_tma.ELEM_BYTES] == tm.elem_bits // 8
    assert rt_tma.find_descriptor(raw, params.ctypes.data + 64) == -1
    noise = np.random.default_rng(5).integers(0, 256, 1 << 20, dtype=np.uint8)
    none, rows = rt_tma.scan_descriptors([noise])
    assert none.shape == (0, 128) and rows.shape == (0, rt_tma.NFIELDS)
    assert rt_tma.find_descriptor(raw, noise.ctypes.data) == -1


def test_scan_reads_64_byte_aligned_offsets_and_stale_derived_fields():
    """In a mapped array a descriptor counts at a 64-byte-aligned address only; one edited by tensormap.replace
    (box bytes left stale, as the GPU leaves them: captured) is taken as the interpreter takes it."""
    raw = encode_tiled("float32", 2, BASE, (64, 8), (256,), (32, 4), (1, 1), swizzle="128B")
    edited = replace_field(raw, "box_dim", 8, ordinal=1)
    with pytest.raises(ValueError, match="encoded_box_bytes"):
        decode_tensormap(edited)
    buf = np.zeros(1024, np.uint8)
    buf[96:224] = raw                                  # 32 bytes off the 64-byte grid
    found, _ = rt_tma.scan_descriptors([buf])
    assert len(found) == 0
    buf[320:448] = edited
    found, fields = rt_tma.scan_descriptors([buf])
    assert len(found) == 1 and (found[0] == edited).all()
    assert fields[0, rt_tma.BOX + 1] == 8 and fields[0, rt_tma.TX_BYTES] == 32 * 8 * 4
    assert rt_tma.find_descriptor(found, buf.ctypes.data + 320) == 0
    assert rt_tma.find_descriptor(found, buf.ctypes.data + 96) == -1
    moved, _ = rt_tma.scan_descriptors([buf], addresses=[BASE + 32])     # 96 is 64-byte aligned there
    assert len(moved) == 1 and (moved[0] == raw).all()


def test_descriptor_fields_take_a_decoded_tensormap():
    with pytest.raises(TypeError, match="decoded TensorMap"):
        rt_tma.descriptor_fields(np.zeros(128, np.uint8))
    with pytest.raises(NotImplementedError, match="interleave"):
        _row("uint8", 3, BASE, (16, 2, 2), (16, 32), (16, 2, 2), (1, 1, 1), interleave="16B")


def _reductions(group):
    cap = Capture(open_golden(GOLDEN / "tma_stores_sm90.npz"))
    return cap, [(i, c) for i, c in enumerate(cap.cases) if c["group"] == group and c.get("op") not in (None, "store")
                 and cap.result[i] == 0 and cap.has_output[i]]


def test_bulk_reductions_leave_the_captured_h200_bytes():
    """Every cp.reduce.async.bulk of the capture (each op and type: integer wraparound, inc / dec, f16 / bf16 sums
    rounded once, f32 and f64 sums, min / max of NaNs and signed zeros): the jitted reduction leaves global memory
    as the H200 did."""
    from warpsim.ptx.native.lower_sync import _BULK_TYPES

    cap, cases = _reductions("bulk")
    assert len(cases) >= 50
    bad = []
    for i, c in cases:
        data = initial(c)
        src = data_bytes(c["seed"] + 1, c["nbytes"])
        code = rt_tma.REDUCE_DTYPES.index(_BULK_TYPES[c["type"].split(".")[-1]])      # (noftz.f16: f16)
        rt_tma.reduce_bytes(rt_tma.REDUCE_OPS.index(c["op"]), code, data.ctypes.data + c["dst_off"], src.ctypes.data,
                            c["nbytes"])
        if not np.array_equal(data, cap.gpu_bytes(i)):
            bad.append((i, c["op"], c["type"]))
    assert not bad, bad


def test_tensor_reductions_leave_the_captured_h200_bytes():
    """Every cp.reduce.async.bulk.tensor of the capture (ranks 1-5, swizzles, clipped boxes, every op and element
    type): the jitted tile reduction leaves global memory as the H200 did."""
    cap, cases = _reductions("tensor")
    assert len(cases) >= 100
    bad = []
    for i, c in cases:
        data = initial(c)
        smem = np.zeros(WINDOW, np.uint8)
        smem[:c["nbytes"]] = data_bytes(c["seed"] + 1, c["nbytes"])
        mem = Mapped((data, int(cap.gaddr[i])))
        f = rt_tma.descriptor_fields(decode_tensormap(cap.tensormap[i]))
        co = np.zeros(5, np.int64)
        co[:len(c["coords"])] = c["coords"]
        status = np.zeros(5, np.int64)
        n = rt_tma.tile_reduce(status, 7, 3, f, co, smem.ctypes.data, smem.size, 0, mem.bases, mem.sizes, mem.ptrs,
                               mem.trk, mem.toff, rt_tma.REDUCE_OPS.index(c["op"]))
        if n < 0 or not np.array_equal(data, cap.gpu_bytes(i)):
            bad.append((i, c["op"], c["dtype"], int(n), status.tolist()))
    assert not bad, bad[:5]


@pytest.mark.parametrize("entry", [pytest.param("bulk_copy", marks=REPEATS_A_PATH), "bulk_add_f16", "tma_add_2d",
                                   pytest.param("tma_xor_3d", marks=REPEATS_A_PATH)])
def test_capture_entries_run_compiled_with_the_h200_bytes(entry):
    """The capture's own kernels (cp.async.bulk, cp.reduce.async.bulk and .tensor statements as the device script
    ran them) on the compiled engine: every byte the H200's.  (bulk_copy's copies are test_ptx_native_hopper's
    bulk kernel's; tma_xor_3d's tile reduction tma_add_2d's with another op, and every op of the capture runs
    jitted above.)"""
    from warpsim.hw.offline.tma_store_replay import _module
    from warpsim.ptx import GlobalMemory

    cap = Capture(open_golden(GOLDEN / "tma_stores_sm90.npz"))
    mod = _module()
    assert mod.translation(entry).native, mod.translation(entry).reason
    ran = 0
    for i, c in enumerate(cap.cases):
        if c.get("entry") != entry or cap.result[i] != 0 or not cap.has_output[i]:
            continue
        gm = GlobalMemory()
        data = initial(c)
        gm.map(data, address=int(cap.gaddr[i]))
        if c["group"] == "tensor":
            args = [bytes(cap.tensormap[i]), np.array(c["coords"] + [0] * (5 - c["rank"]), np.int32),
                    data_bytes(c["seed"] + 1, c["nbytes"]), c["nbytes"]]
        else:
            args = [int(cap.gaddr[i]) + c["dst_off"], data_bytes(c["seed"] + 1, c["nbytes"]), c["nbytes"]]
        mod.launch(entry, (1,), (128,), args, memory=gm, engine="compiled", workers=1)
        assert mod.last_engine["engine"] == "compiled"
        assert np.array_equal(data, cap.gpu_bytes(i)), (entry, i)
        ran += 1
    assert ran >= 1


def test_tensor_reduction_refusals():
    """and / or / xor on an int64 tensormap faulted on the H100 (captured) and a type no reduction takes is
    refused as the interpreter refuses it: nothing written, the rule's code."""
    G = np.zeros(64, np.uint8)
    mem = Mapped((G, BASE))
    smem = np.ones(256, np.uint8)
    for dtype, op, detail in (("int64", "xor", 6), ("float32", "min", 5), ("uint8", "add", 5)):
        eb = np.dtype(dtype).itemsize
        f = _row(dtype, 1, BASE, (64 // eb,), (), (16 // eb,), (1,))
        co = np.zeros(5, np.int64)
        status = np.zeros(5, np.int64)
        n = rt_tma.tile_reduce(status, 7, 3, f, co, smem.ctypes.data, smem.size, 0, mem.bases, mem.sizes, mem.ptrs,
                               mem.trk, mem.toff, rt_tma.REDUCE_OPS.index(op))
        assert n == -1 and status[0] == rt.BULK_COPY and status[4] == detail and not G.any(), (dtype, op)


def test_im2col_loads_land_the_captured_h200_windows():
    """The 10 im2col loads the H200 ran (ranks 3-5, 1- to 4-byte types, every swizzle; the driver's
    descriptors): the jitted im2col load leaves the shared window as the GPU did, completes its byte count,
    and refuses the 15 whose first pixel lay outside the pixel box (they faulted there)."""
    cap = Capture(open_golden(GOLDEN / "tma_stores_sm90.npz"))
    cases = [(i, c) for i, c in enumerate(cap.cases) if c["group"] == "im2col"]
    names = {0: "uint8", 1: "uint16", 6: "float16", 7: "float32", 9: "bfloat16"}
    ran, bad, refused = 0, [], 0
    for i, c in cases:
        if cap.result[i] not in (0, -1) or (cap.result[i] == 0 and not cap.has_output[i]):
            continue
        r = c["rank"]
        data = data_bytes(c["seed"], c["gbytes"])
        mem = Mapped((data, int(cap.gaddr[i])))
        smem = np.full(16384, 0xA5, np.uint8)
        if cap.result[i] == 0:          # the driver's descriptor; the faulted cases' rebuilt (as test_tma_stores)
            f = rt_tma.descriptor_fields(rt_tma.decode_im2col(cap.tensormap[i]))
        else:
            tm = make_tensormap(names[c["dtype"]], r, int(cap.gaddr[i]), c["dims"], c["strides"],
                                [c["channels_per_pixel"]] + [1] * (r - 1), [1] * r)
            f = rt_tma.descriptor_fields(Im2colMap(tm, tuple(c["lower"]), tuple(c["upper"]), c["channels_per_pixel"],
                                                   c["pixels_per_column"]))
        co, offs, status = np.zeros(5, np.int64), np.zeros(3, np.int64), np.zeros(5, np.int64)
        co[:r] = c["coords"]
        offs[:r - 2] = c["offsets"]
        n = rt_tma.im2col_load(status, 7, 3, f, co, offs, smem.ctypes.data, smem.size, 0, mem.bases, mem.sizes,
                               mem.ptrs, mem.trk, mem.toff)
        if cap.result[i] == -1:
            refused += 1
            if n != -1 or status[0] != rt.BULK_COPY or status[4] != 7:
                bad.append((i, "not refused", int(n)))
            continue
        ran += 1
        if n != c["nbytes"] or not np.array_equal(smem, cap.gpu_bytes(i)):
            bad.append((i, int(n), c["nbytes"]))
    assert ran == 10 and refused == 15 and not bad, (ran, refused, bad[:3])


def test_an_im2col_capture_entry_runs_compiled_with_the_h200_window():
    from warpsim.hw.offline.tma_store_replay import _module
    from warpsim.ptx import GlobalMemory

    cap = Capture(open_golden(GOLDEN / "tma_stores_sm90.npz"))
    mod = _module()
    i, c = next((i, c) for i, c in enumerate(cap.cases)
                if c["group"] == "im2col" and c["rank"] == 4 and cap.result[i] == 0 and cap.has_output[i])
    assert mod.translation(c["entry"]).native, mod.translation(c["entry"]).reason
    gm = GlobalMemory()
    gm.map(data_bytes(c["seed"], c["gbytes"]), address=int(cap.gaddr[i]))
    win, status = np.zeros(16384, np.uint8), np.zeros(4, np.int32)
    co = np.array(c["coords"] + [0] * (5 - c["rank"]), np.int32)
    offs = np.array(c["offsets"] + [0] * (4 - len(c["offsets"])), np.uint16)
    mod.launch(c["entry"], (1,), (128,), [bytes(cap.tensormap[i]), co, offs, c["nbytes"], win, status], memory=gm,
               engine="compiled", workers=1)
    assert mod.last_engine["engine"] == "compiled"
    assert np.array_equal(win, cap.gpu_bytes(i))
