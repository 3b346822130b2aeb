"""Generate the capture kernels (caps.cu), their inputs (inputs.npz) and a launch manifest (manifest.json)."""
import json, sys
import numpy as np

rng = np.random.default_rng(14)
K = []          # kernel sources
M = []          # launch recipes
IN = {}         # input arrays

CT = {"h": ("unsigned short", "h"), "r": ("unsigned int", "r"), "l": ("unsigned long long", "l"),
      "f": ("float", "f"), "d": ("double", "d")}
NP = {"h": np.uint16, "r": np.uint32, "l": np.uint64, "f": np.uint32, "d": np.uint64}


def f32_inputs(n):
    """Random and edge f32 words: every exponent, specials, values near f16/bf16/tf32/fp8 boundaries."""
    specials = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 1, 0x807FFFFF,
                0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000]
    # ties and near-ties for 10/7/10/3/2 mantissa bits at many exponents
    edges = []
    for mb in (10, 7, 3, 2):
        drop = 23 - mb
        for e in range(80, 160):
            base = rng.integers(0, 1 << mb, 40) << drop
            half = 1 << (drop - 1)
            for d in (half - 1, half, half + 1, 0, (1 << drop) - 1):
                edges.append((e << 23) | base[:8] | d)
    edges = np.concatenate([np.asarray(x, dtype=np.uint64) for x in edges]).astype(np.uint32)
    # overflow neighbourhoods of f16 (65504), e4m3 (448), e5m2 (57344), bf16 max
    near = []
    for v in (65504.0, 65520.0, 448.0, 464.0, 480.0, 57344.0, 61440.0, 3.3895314e38, 6.1035156e-05, 5.9604645e-08,
              2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 2.0 ** -14, 2.0 ** -16, 2.0 ** -17, 2.0 ** -133, 2.0 ** -126):
        w = int(np.float32(v).view(np.uint32))
        near += list(range(w - 40, w + 40))
    near = np.array(near, dtype=np.int64) & 0x7FFFFFFF
    near = near.astype(np.uint32)
    rand_exp = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)          # any word
    mid = (rng.integers(96, 160, n).astype(np.uint32) << 23) | rng.integers(0, 1 << 23, n).astype(np.uint32)
    mid |= rng.integers(0, 2, n).astype(np.uint32) << 31
    allw = np.concatenate([np.array(specials, np.uint32), edges, near, near | np.uint32(0x80000000), rand_exp, mid])
    sign = rng.integers(0, 2, allw.size).astype(np.uint32) << 31
    allw[len(specials):len(specials) + edges.size] |= sign[:edges.size]
    return allw[:n].copy()


N32 = 1 << 15
N16 = 1 << 16
IN["f32a"] = f32_inputs(N32)
IN["f32b"] = np.roll(IN["f32a"], 12345) ^ (rng.integers(0, 2, N32).astype(np.uint32) << 31)
IN["u16"] = np.arange(N16, dtype=np.uint16)
IN["u16b"] = rng.permutation(N16).astype(np.uint16)
IN["w16x2"] = IN["u16"].astype(np.uint32) | (IN["u16b"].astype(np.uint32) << 16)
ints = rng.integers(0, 1 << 32, N32, dtype=np.uint64).astype(np.uint32)
ints[:64] = np.array([0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000,
                      0xFFFFFFFF, 0xFFFFFF80, 0xFFFF8000, 0x00FFFFFF, 0x01000000, 0x01000001, 0x01000003] + list(range(44)),
                     dtype=np.uint32)
IN["i32"] = ints
IN["i64"] = (ints.astype(np.uint64) << 32 | np.roll(ints, 7).astype(np.uint64))
IN["f64"] = np.concatenate([IN["f32a"].view(np.float32).astype(np.float64).view(np.uint64)[: N32 // 2],
                            rng.integers(0, 1 << 64, N32 // 2, dtype=np.uint64)])

# (opcode, dst kind, [src kinds], input keys)
CVT = []
for rnd in ("rn", "rz", "rm", "rp"):
    CVT.append((f"cvt.{rnd}.f16.f32", "h", ["f"], ["f32a"]))
    CVT.append((f"cvt.{rnd}.bf16.f32", "h", ["f"], ["f32a"]))
for rnd in ("rn", "rz"):
    for relu in ("", ".relu"):
        CVT.append((f"cvt.{rnd}{relu}.f16x2.f32", "r", ["f", "f"], ["f32a", "f32b"]))
        CVT.append((f"cvt.{rnd}{relu}.bf16x2.f32", "r", ["f", "f"], ["f32a", "f32b"]))
CVT += [("cvt.rn.relu.f16.f32", "h", ["f"], ["f32a"]), ("cvt.rn.relu.bf16.f32", "h", ["f"], ["f32a"]),
        ("cvt.rna.tf32.f32", "r", ["f"], ["f32a"]), ("cvt.rna.satfinite.tf32.f32", "r", ["f"], ["f32a"]),
        ("cvt.rn.tf32.f32", "r", ["f"], ["f32a"]), ("cvt.rz.tf32.f32", "r", ["f"], ["f32a"]),
        ("cvt.rn.satfinite.tf32.f32", "r", ["f"], ["f32a"]),
        ("cvt.rn.satfinite.e4m3x2.f32", "h", ["f", "f"], ["f32a", "f32b"]),
        ("cvt.rn.satfinite.e5m2x2.f32", "h", ["f", "f"], ["f32a", "f32b"]),
        ("cvt.rn.satfinite.relu.e4m3x2.f32", "h", ["f", "f"], ["f32a", "f32b"]),
        ("cvt.rn.satfinite.e4m3x2.f16x2", "h", ["r"], ["w16x2"]),
        ("cvt.rn.satfinite.e5m2x2.f16x2", "h", ["r"], ["w16x2"]),
        ("cvt.rn.f16x2.e4m3x2", "r", ["h"], ["u16"]),
        ("cvt.rn.f16x2.e5m2x2", "r", ["h"], ["u16"]),
        ("cvt.f32.f16", "f", ["h"], ["u16"]), ("cvt.f32.bf16", "f", ["h"], ["u16"]),
        ("cvt.f64.f32", "d", ["f"], ["f32a"]),
        ("cvt.rn.f32.f64", "f", ["d"], ["f64"]), ("cvt.rz.f32.f64", "f", ["d"], ["f64"]),
        ("cvt.rn.f16.f64", "h", ["d"], ["f64"]),
        ("cvt.rn.bf16.f16", "h", ["h"], ["u16"]), ("cvt.f32.f32", "f", ["f"], ["f32a"]),
        ("cvt.rni.f32.f32", "f", ["f"], ["f32a"]), ("cvt.rzi.f32.f32", "f", ["f"], ["f32a"]),
        ("cvt.rmi.f32.f32", "f", ["f"], ["f32a"]), ("cvt.rpi.f32.f32", "f", ["f"], ["f32a"]),
        ("cvt.ftz.f32.f32", "f", ["f"], ["f32a"]),
        ("cvt.rni.s32.f32", "r", ["f"], ["f32a"]), ("cvt.rzi.s32.f32", "r", ["f"], ["f32a"]),
        ("cvt.rmi.s32.f32", "r", ["f"], ["f32a"]), ("cvt.rpi.s32.f32", "r", ["f"], ["f32a"]),
        ("cvt.rzi.u32.f32", "r", ["f"], ["f32a"]), ("cvt.rni.u32.f32", "r", ["f"], ["f32a"]),
        ("cvt.rzi.s64.f32", "l", ["f"], ["f32a"]), ("cvt.rzi.s32.f16", "r", ["h"], ["u16"]),
        ("cvt.rn.f32.s32", "f", ["r"], ["i32"]), ("cvt.rz.f32.s32", "f", ["r"], ["i32"]),
        ("cvt.rn.f32.u32", "f", ["r"], ["i32"]), ("cvt.rn.f16.s32", "h", ["r"], ["i32"]),
        ("cvt.rn.f32.s64", "f", ["l"], ["i64"]), ("cvt.rn.f64.s32", "d", ["r"], ["i32"]),
        ("cvt.s32.s8", "r", ["r"], ["i32"]), ("cvt.u32.u8", "r", ["r"], ["i32"]),
        ("cvt.s32.s16", "r", ["h"], ["u16"]), ("cvt.u32.u16", "r", ["h"], ["u16"]),
        ("cvt.u16.u32", "h", ["r"], ["i32"]), ("cvt.s64.s32", "l", ["r"], ["i32"]),
        ("cvt.u64.u32", "l", ["r"], ["i32"]), ("cvt.u32.u64", "r", ["l"], ["i64"]),
        ("cvt.sat.s8.s32", "r", ["r"], ["i32"]), ("cvt.sat.u8.s32", "r", ["r"], ["i32"]),
        ("cvt.sat.s16.s32", "r", ["r"], ["i32"]), ("cvt.sat.u32.s32", "r", ["r"], ["i32"]),
        ("cvt.sat.s32.u32", "r", ["r"], ["i32"]), ("cvt.sat.s32.s64", "r", ["l"], ["i64"])]
if len(sys.argv) > 1 and sys.argv[1] == "--skip":
    bad = set(open("skip.txt").read().split("\n"))
    CVT = [c for c in CVT if c[0] not in bad]


def cname(op):
    return op.replace(".", "_").replace("::", "_")


for op, dk, sk, keys in CVT:
    name = "cvt__" + cname(op)
    ct, cc = CT[dk]
    loads, asm_in = [], []
    for j, (s, key) in enumerate(zip(sk, keys)):
        st, sc = CT[s]
        if s == "f":
            loads.append(f"float s{j} = __uint_as_float(((const unsigned int*)in{j})[i]);")
        elif s == "d":
            loads.append(f"double s{j} = __longlong_as_double(((const long long*)in{j})[i]);")
        else:
            loads.append(f"{st} s{j} = (({st} const*)in{j})[i];")
        asm_in.append(f'"{sc}"(s{j})')
    params = ", ".join(f"const void* in{j}" for j in range(len(sk)))
    ops = ", ".join(f"%{j + 1}" for j in range(len(sk)))
    if dk == "f":
        store = "((unsigned int*)out)[i] = __float_as_uint(d);"
    elif dk == "d":
        store = "((long long*)out)[i] = __double_as_longlong(d);"
    else:
        store = f"(({ct}*)out)[i] = d;"
    K.append(f"""extern "C" __global__ void {name}({params}, void* out, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  {' '.join(loads)}
  {ct} d; asm volatile("{op} %0, {ops};" : "={cc}"(d) : {', '.join(asm_in)});
  {store}
}}""")
    n = IN[keys[0]].size
    M.append({"family": "cvt", "op": op, "kernel": name, "grid": n // 256, "block": 256, "shared": 0,
              "args": [{"in": k} for k in keys] + [{"out": "out", "dtype": np.dtype(NP[dk]).name, "count": n}, {"int": n}],
              "dst": dk, "src": sk, "inputs": keys})

# ---- ldmatrix / stmatrix / movmatrix --------------------------------------------------------------
T = 64                       # trials (one warp each)
SW = 512                     # shared words per trial (2 KiB = 128 row slots of 16 bytes)
IN["smem"] = rng.integers(0, 1 << 32, T * SW, dtype=np.uint64).astype(np.uint32)
IN["ld_offs"] = (rng.integers(0, SW // 4, T * 32) * 16).astype(np.uint32)
IN["st_offs"] = np.concatenate([rng.permutation(SW // 4)[:32] * 16 for _ in range(T)]).astype(np.uint32)
IN["regs4"] = rng.integers(0, 1 << 32, T * 32 * 4, dtype=np.uint64).astype(np.uint32)
for n in (1, 2, 4):
    for trans in ("", ".trans"):
        op = f"ldmatrix.sync.aligned.m8n8.x{n}{trans}.shared.b16"
        name = "ldm__" + cname(op)
        outs = ", ".join(f"%{i}" for i in range(n))
        cons = ", ".join(f'"=r"(r[{i}])' for i in range(n))
        K.append(f"""extern "C" __global__ void {name}(const unsigned* init, const unsigned* offs, unsigned* out) {{
  __shared__ __align__(16) unsigned sm[{SW}];
  int t = blockIdx.x, l = threadIdx.x;
  for (int i = l; i < {SW}; i += 32) sm[i] = init[t * {SW} + i];
  __syncwarp();
  unsigned a = (unsigned)__cvta_generic_to_shared(sm) + offs[t * 32 + l];
  unsigned r[{n}];
  asm volatile("{op} {{{outs}}}, [%{n}];" : {cons} : "r"(a));
  for (int i = 0; i < {n}; ++i) out[(t * 32 + l) * {n} + i] = r[i];
}}""")
        M.append({"family": "ldmatrix", "op": op, "kernel": name, "grid": T, "block": 32, "shared": 0,
                  "args": [{"in": "smem"}, {"in": "ld_offs"}, {"out": "out", "dtype": "uint32", "count": T * 32 * n}]})
        op = f"stmatrix.sync.aligned.m8n8.x{n}{trans}.shared.b16"
        name = "stm__" + cname(op)
        ins = ", ".join(f"%{i + 1}" for i in range(n))
        cons = ", ".join(f'"r"(r[{i}])' for i in range(n))
        K.append(f"""extern "C" __global__ void {name}(const unsigned* init, const unsigned* offs, const unsigned* regs, unsigned* out) {{
  __shared__ __align__(16) unsigned sm[{SW}];
  int t = blockIdx.x, l = threadIdx.x;
  for (int i = l; i < {SW}; i += 32) sm[i] = init[t * {SW} + i];
  __syncwarp();
  unsigned a = (unsigned)__cvta_generic_to_shared(sm) + offs[t * 32 + l];
  unsigned r[{n}];
  for (int i = 0; i < {n}; ++i) r[i] = regs[(t * 32 + l) * 4 + i];
  asm volatile("{op} [%0], {{{ins}}};" :: "r"(a), {cons} : "memory");
  __syncwarp();
  for (int i = l; i < {SW}; i += 32) out[t * {SW} + i] = sm[i];
}}""")
        M.append({"family": "stmatrix", "op": op, "kernel": name, "grid": T, "block": 32, "shared": 0,
                  "args": [{"in": "smem"}, {"in": "st_offs"}, {"in": "regs4"},
                           {"out": "out", "dtype": "uint32", "count": T * SW}]})
op = "movmatrix.sync.aligned.m8n8.trans.b16"
K.append(f"""extern "C" __global__ void mov__movmatrix(const unsigned* regs, unsigned* out) {{
  int i = blockIdx.x * 32 + threadIdx.x; unsigned d;
  asm volatile("{op} %0, %1;" : "=r"(d) : "r"(regs[i * 4]));
  out[i] = d;
}}""")
M.append({"family": "movmatrix", "op": op, "kernel": "mov__movmatrix", "grid": T, "block": 32, "shared": 0,
          "args": [{"in": "regs4"}, {"out": "out", "dtype": "uint32", "count": T * 32}]})

# ---- wmma ---------------------------------------------------------------------------------------
SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16), "m16n16k8": (16, 16, 8)}
AB_TYPES = {"m16n16k16": ["f16", "bf16", "s8", "u8"], "m32n8k16": ["f16", "bf16", "s8", "u8"],
            "m8n32k16": ["f16", "bf16", "s8", "u8"], "m16n16k8": ["tf32"]}
BITS = {"f16": 16, "bf16": 16, "s8": 8, "u8": 8, "tf32": 32, "f32": 32, "s32": 32}


def nregs(shape, frag, typ):
    m, n, k = SHAPES[shape]
    if frag == "a":
        elems = m * k
    elif frag == "b":
        elems = k * n
    else:
        elems = m * n
    if typ == "f16" and frag in "ab":
        return 8                                 # f16 A/B fragments hold each element twice
    return elems * BITS[typ] // 32 // 32


def dims(shape, frag):
    m, n, k = SHAPES[shape]
    return {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[frag]


PAD = 16
CTYPES = {"f16": "unsigned short", "bf16": "unsigned short", "s8": "unsigned char", "u8": "unsigned char",
          "tf32": "unsigned", "f32": "unsigned", "s32": "unsigned"}
layout_forms = []
for shape in SHAPES:
    for typ in AB_TYPES[shape]:
        for frag in "ab":
            layout_forms.append((shape, frag, typ))
    for typ in (["f32"] if shape == "m16n16k8" else ["f16", "f32", "s32"]):
        layout_forms.append((shape, "c", typ))
for shape, frag, typ in layout_forms:
    for lay in ("row", "col"):
        r, c = dims(shape, frag)
        ldm = (c if lay == "row" else r) + PAD
        size = ldm * (r if lay == "row" else c)
        nr = nregs(shape, frag, typ)
        op = f"wmma.load.{frag}.sync.aligned.{lay}.{shape}.global.{typ}"
        name = "wl__" + cname(op)
        outs = ", ".join(f"%{i}" for i in range(nr))
        cons = ", ".join(f'"=r"(r[{i}])' for i in range(nr))
        K.append(f"""extern "C" __global__ void {name}(const {CTYPES[typ]}* mem, unsigned* out) {{
  int l = threadIdx.x; unsigned r[{nr}];
  asm volatile("{op} {{{outs}}}, [%{nr}], %{nr + 1};" : {cons} : "l"(mem + blockIdx.x * {size}), "r"({ldm}));
  for (int i = 0; i < {nr}; ++i) out[(blockIdx.x * 32 + l) * {nr} + i] = r[i];
}}""")
        # memory holds the element index (in memory order); 8-bit types use two trials: low byte, high byte
        idx = np.arange(size)
        if BITS[typ] == 8:
            key = f"idx8_{size}"
            IN[key] = np.concatenate([idx & 0xFF, idx >> 8]).astype(np.uint8)
            grid = 2
        else:
            key = f"idx{BITS[typ]}_{size}"
            IN[key] = idx.astype(np.uint16 if BITS[typ] == 16 else np.uint32)
            grid = 1
        M.append({"family": "wmma_load", "op": op, "kernel": name, "grid": grid, "block": 32, "shared": 0,
                  "ldm": ldm, "args": [{"in": key}, {"out": "out", "dtype": "uint32", "count": grid * 32 * nr}]})
        if frag == "c":
            op = f"wmma.store.d.sync.aligned.{lay}.{shape}.global.{typ}"
            name = "ws__" + cname(op)
            ins = ", ".join(f"%{i + 2}" for i in range(nr))
            cons = ", ".join(f'"r"(r[{i}])' for i in range(nr))
            K.append(f"""extern "C" __global__ void {name}({CTYPES[typ]}* mem, const unsigned* regs) {{
  int l = threadIdx.x; unsigned r[{nr}];
  for (int i = 0; i < {nr}; ++i) r[i] = regs[l * {nr} + i];
  asm volatile("{op} [%0], {{{ins}}}, %1;" :: "l"(mem), "r"({ldm}), {cons} : "memory");
}}""")
            # register element ids: 1 + lane * elems_per_lane + element
            per = nr * 32 // BITS[typ]
            ids = 1 + np.arange(32)[:, None] * per + np.arange(per)[None, :]
            if BITS[typ] == 16:
                w = (ids[:, 0::2] | (ids[:, 1::2] << 16)).astype(np.uint32)
            else:
                w = ids.astype(np.uint32)
            IN[f"sid_{shape}_{typ}"] = w.reshape(-1)
            M.append({"family": "wmma_store", "op": op, "kernel": name, "grid": 1, "block": 32, "shared": 0,
                      "ldm": ldm, "args": [{"out": "mem", "dtype": {16: "uint16", 32: "uint32"}[BITS[typ]], "count": size},
                                           {"in": f"sid_{shape}_{typ}"}]})


def fvals(n, typ):
    """Ordinary values with ~3% special values, as raw words of typ."""
    import ml_dtypes
    dt = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "tf32": np.float32, "f32": np.float32}[typ]
    x = rng.standard_normal(n) * np.exp2(rng.integers(-4, 5, n))
    v = x.astype(dt)
    w = v.view(np.uint16 if dt != np.float32 else np.uint32).copy()
    sp = rng.random(n) < 0.03
    if dt == np.float32:
        pool = np.array([0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000123, 0x7F7FFFFF, 0x3F800000], np.uint32)
    elif typ == "f16":
        pool = np.array([0x8000, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x03FF, 0x7BFF, 0xFBFF], np.uint16)
    else:
        pool = np.array([0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x007F, 0x7F7F], np.uint16)
    w[sp] = rng.choice(pool, sp.sum())
    return w


WT = 4   # trials per wmma.mma form (one warp each)
for shape in SHAPES:
    m, n, k = SHAPES[shape]
    combos = []
    for typ in AB_TYPES[shape]:
        if typ == "f16":
            combos += [("f16", d, c, "") for d in ("f16", "f32") for c in ("f16", "f32")]
        elif typ in ("bf16", "tf32"):
            combos.append((typ, "f32", "f32", ""))
        else:
            combos += [(typ, "s32", "s32", s) for s in ("", ".satfinite")]
    for typ, dt, ctp, sat in combos:
        for al in ("row", "col"):
            for bl in ("row", "col"):
                if typ == "f16":
                    op = f"wmma.mma.sync.aligned.{al}.{bl}.{shape}.{dt}.{ctp}"
                else:
                    op = f"wmma.mma.sync.aligned.{al}.{bl}.{shape}.{dt}.{typ}.{typ}.{ctp}{sat}"
                name = "wm__" + cname(op)
                na, nb, nc, nd = nregs(shape, "a", typ), nregs(shape, "b", typ), nregs(shape, "c", ctp), nregs(shape, "c", dt)
                lda = k if al == "row" else m
                ldb = n if bl == "row" else k
                sa, sb, sc = m * k, k * n, m * n
                D = ", ".join(f"%{i}" for i in range(nd))
                A = ", ".join(f"%{nd + i}" for i in range(na))
                B = ", ".join(f"%{nd + na + i}" for i in range(nb))
                C = ", ".join(f"%{nd + na + nb + i}" for i in range(nc))
                cons_d = ", ".join(f'"=r"(d[{i}])' for i in range(nd))
                cons_i = ", ".join([f'"r"(a[{i}])' for i in range(na)] + [f'"r"(b[{i}])' for i in range(nb)] +
                                   [f'"r"(c[{i}])' for i in range(nc)])
                at, ct_ = CTYPES[typ], CTYPES[ctp]
                dtc = CTYPES[dt]
                K.append(f"""extern "C" __global__ void {name}(const {at}* A, const {at}* B, const {ct_}* Cm, {dtc}* Dm) {{
  int t = blockIdx.x, l = threadIdx.x; unsigned a[{na}], b[{nb}], c[{nc}], d[{nd}];
  asm volatile("wmma.load.a.sync.aligned.{al}.{shape}.global.{typ} {{{', '.join(f'%{i}' for i in range(na))}}}, [%{na}], {lda};" : {', '.join(f'"=r"(a[{i}])' for i in range(na))} : "l"(A + t * {sa}));
  asm volatile("wmma.load.b.sync.aligned.{bl}.{shape}.global.{typ} {{{', '.join(f'%{i}' for i in range(nb))}}}, [%{nb}], {ldb};" : {', '.join(f'"=r"(b[{i}])' for i in range(nb))} : "l"(B + t * {sb}));
  asm volatile("wmma.load.c.sync.aligned.row.{shape}.global.{ctp} {{{', '.join(f'%{i}' for i in range(nc))}}}, [%{nc}], {n};" : {', '.join(f'"=r"(c[{i}])' for i in range(nc))} : "l"(Cm + t * {sc}));
  asm volatile("{op} {{{D}}}, {{{A}}}, {{{B}}}, {{{C}}};" : {cons_d} : {cons_i});
  asm volatile("wmma.store.d.sync.aligned.row.{shape}.global.{dt} [%0], {{{', '.join(f'%{i + 1}' for i in range(nd))}}}, {n};" :: "l"(Dm + t * {sc}), {', '.join(f'"r"(d[{i}])' for i in range(nd))} : "memory");
}}""")
                # inputs
                def mat(typ_, size):
                    if typ_ in ("s8", "u8"):
                        return rng.integers(0, 256, size).astype(np.uint8)
                    if typ_ == "s32":
                        v = rng.integers(-2**31, 2**31, size)
                        v[rng.random(size) < 0.9] //= 2**8
                        return v.astype(np.int64).astype(np.uint32)
                    return fvals(size, typ_)
                key = name
                IN[key + "_A"] = mat(typ, WT * sa)
                IN[key + "_B"] = mat(typ, WT * sb)
                IN[key + "_C"] = mat(ctp, WT * sc)
                M.append({"family": "wmma_mma", "op": op, "kernel": name, "grid": WT, "block": 32, "shared": 0,
                          "args": [{"in": key + "_A"}, {"in": key + "_B"}, {"in": key + "_C"},
                                   {"out": "D", "dtype": {16: "uint16", 32: "uint32"}[BITS[dt]], "count": WT * sc}]})

open("caps.cu", "w").write("#include <cuda_fp16.h>\n\n" + "\n\n".join(K) + "\n")
json.dump(M, open("manifest.json", "w"), indent=0)
np.savez_compressed("inputs.npz", **IN)
print(len(K), "kernels", sum(v.nbytes for v in IN.values()) / 1e6, "MB inputs")
