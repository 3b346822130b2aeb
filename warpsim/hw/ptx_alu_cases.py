"""Capture kernels for the ALU rows of warpsim's instruction table: d = op(a, b, c) per element."""
import json
import numpy as np

rng = np.random.default_rng(1414)
N = 4096
IN = {}
edge32 = np.array([0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF,
                   0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFE, 0x12345678, 0xDEADBEEF], np.uint32)


def ints(n):
    v = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    small = rng.random(n) < 0.3
    v[small] = rng.integers(-70, 70, small.sum()).astype(np.int64).astype(np.uint32)
    v[:edge32.size] = edge32
    return v


def shifts(n):
    return rng.integers(0, 70, n).astype(np.uint32)


IN["ia"], IN["ib"], IN["ic"] = ints(N), np.roll(ints(N), 5), ints(N)
IN["ia"][edge32.size:2 * edge32.size] = edge32
IN["ib"][:edge32.size * edge32.size // edge32.size] = np.roll(edge32, 3)
IN["sh"] = shifts(N)
IN["bf"] = rng.integers(0, 70, N).astype(np.uint32)
IN["la"] = (ints(N).astype(np.uint64) << 32) | ints(N).astype(np.uint64)
IN["lb"] = (np.roll(ints(N), 9).astype(np.uint64) << 32) | np.roll(ints(N), 3).astype(np.uint64)
IN["lc"] = (ints(N).astype(np.uint64) << 32) | ints(N).astype(np.uint64)
IN["prm"] = rng.integers(0, 1 << 16, N).astype(np.uint32)


def floats(n, shift):
    sp = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x00000001,
                   0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F800000, 0xBF800000, 0x34000000], np.uint32)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32).view(np.uint32)
    r = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    pick = rng.random(n) < 0.15
    x[pick] = r[pick]
    x[:sp.size] = np.roll(sp, shift)
    m = rng.random(n) < 0.05
    x[m] = rng.choice(sp, m.sum())
    return x


IN["fa"], IN["fb"], IN["fc"] = floats(N, 0), floats(N, 3), floats(N, 7)
# near-cancellation fma cases: c = -round(a*b)
k = np.arange(64, 512)
prod = (IN["fa"][k].view(np.float32).astype(np.float64) * IN["fb"][k].view(np.float32).astype(np.float64))
IN["fc"][k] = (-prod).astype(np.float32).view(np.uint32)

# (opcode, dst kind, [(src kind, input key)])   kinds: r = b32 reg, l = b64 reg, f = f32 reg, p = predicate out
F = []
for t in ("s32", "u32"):
    F += [(f"add.{t}", "r", ["ia", "ib"]), (f"sub.{t}", "r", ["ia", "ib"]), (f"mul.lo.{t}", "r", ["ia", "ib"]),
          (f"mul.hi.{t}", "r", ["ia", "ib"]), (f"mad.lo.{t}", "r", ["ia", "ib", "ic"]),
          (f"mad.hi.{t}", "r", ["ia", "ib", "ic"]), (f"mul.wide.{t}", "l", ["ia", "ib"]),
          (f"mad.wide.{t}", "l", ["ia", "ib", "lc"]), (f"min.{t}", "r", ["ia", "ib"]), (f"max.{t}", "r", ["ia", "ib"]),
          (f"shr.{t}", "r", ["ia", "sh"]), (f"bfe.{t}", "r", ["ia", "bf", "sh"])]
for t in ("s64", "u64"):
    F += [(f"add.{t}", "l", ["la", "lb"]), (f"sub.{t}", "l", ["la", "lb"]), (f"mul.lo.{t}", "l", ["la", "lb"]),
          (f"mul.hi.{t}", "l", ["la", "lb"]), (f"mad.lo.{t}", "l", ["la", "lb", "lc"]),
          (f"min.{t}", "l", ["la", "lb"]), (f"max.{t}", "l", ["la", "lb"]), (f"shr.{t}", "l", ["la", "sh"]),
          (f"bfe.{t}", "l", ["la", "bf", "sh"])]
F += [("add.sat.s32", "r", ["ia", "ib"]), ("sub.sat.s32", "r", ["ia", "ib"]), ("abs.s32", "r", ["ia"]),
      ("neg.s32", "r", ["ia"]), ("shl.b32", "r", ["ia", "sh"]), ("shr.b32", "r", ["ia", "sh"]),
      ("shl.b64", "l", ["la", "sh"]), ("and.b32", "r", ["ia", "ib"]), ("or.b32", "r", ["ia", "ib"]),
      ("xor.b32", "r", ["ia", "ib"]), ("not.b32", "r", ["ia"]), ("cnot.b32", "r", ["ia"]),
      ("popc.b32", "r", ["ia"]), ("popc.b64", "r", ["la"]), ("clz.b32", "r", ["ia"]), ("clz.b64", "r", ["la"]),
      ("brev.b32", "r", ["ia"]), ("brev.b64", "l", ["la"]), ("bfi.b32", "r", ["ia", "ib", "bf", "sh"]),
      ("bfi.b64", "l", ["la", "lb", "bf", "sh"]), ("prmt.b32", "r", ["ia", "ib", "prm"])]
for cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
    F.append((f"setp.{cmp}.s32", "p", ["ia", "ib"]))
for cmp in ("lo", "ls", "hi", "hs"):
    F.append((f"setp.{cmp}.u32", "p", ["ia", "ib"]))
for cmp in ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"):
    F.append((f"setp.{cmp}.f32", "p", ["fa", "fb"]))
F += [("add.f32", "f", ["fa", "fb"]), ("sub.f32", "f", ["fa", "fb"]), ("mul.f32", "f", ["fa", "fb"]),
      ("add.rn.f32", "f", ["fa", "fb"]), ("mul.rn.f32", "f", ["fa", "fb"]),
      ("fma.rn.f32", "f", ["fa", "fb", "fc"]), ("min.f32", "f", ["fa", "fb"]), ("max.f32", "f", ["fa", "fb"]),
      ("neg.f32", "f", ["fa"]), ("abs.f32", "f", ["fa"])]
SH = [("shfl.sync.bfly.b32", "0x1f"), ("shfl.sync.down.b32", "0x1f"), ("shfl.sync.up.b32", "0"),
      ("shfl.sync.idx.b32", "0x1f"), ("shfl.sync.down.b32", "0x81f"), ("shfl.sync.idx.b32", "0x101f")]
C = {"r": ("unsigned", "r"), "l": ("unsigned long long", "l"), "f": ("float", "f")}
KIND = {k: ("l" if k[0] == "l" else ("f" if k[0] == "f" else "r")) for k in IN}
K, M = [], []
for op, dk, keys in F:
    name = "alu__" + op.replace(".", "_")
    srcs = [KIND[k] for k in keys]
    if op.startswith("mad.wide"):
        srcs[2] = "l"
    loads, cons = [], []
    for j, (s, k) in enumerate(zip(srcs, keys)):
        if s == "f":
            loads.append(f"float s{j} = __uint_as_float(((const unsigned*)in{j})[i]);")
        else:
            loads.append(f"{C[s][0]} s{j} = (({C[s][0]} const*)in{j})[i];")
        cons.append(f'"{C[s][1]}"(s{j})')
    params = ", ".join(f"const void* in{j}" for j in range(len(keys)))
    ops = ", ".join(f"%{j + 1}" for j in range(len(keys)))
    if dk == "p":
        asm = (f'asm volatile("{{ .reg .pred p; {op} p, {ops}; selp.u32 %0, 1, 0, p; }}" : "=r"(d) : {", ".join(cons)});')
        decl, store, odt = "unsigned d;", "((unsigned*)out)[i] = d;", "uint32"
    elif dk == "f":
        asm = f'asm volatile("{op} %0, {ops};" : "=f"(d) : {", ".join(cons)});'
        decl, store, odt = "float d;", "((unsigned*)out)[i] = __float_as_uint(d);", "uint32"
    else:
        asm = f'asm volatile("{op} %0, {ops};" : "={C[dk][1]}"(d) : {", ".join(cons)});'
        decl, store, odt = f"{C[dk][0]} d;", f"(({C[dk][0]}*)out)[i] = d;", "uint32" if dk == "r" else "uint64"
    K.append(f"""extern "C" __global__ void {name}({params}, void* out) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  {' '.join(loads)}
  {decl} {asm}
  {store}
}}""")
    M.append({"family": "alu", "op": op, "kernel": name, "grid": N // 256, "block": 256,
              "args": [{"in": k} for k in keys] + [{"out": "out", "dtype": odt, "count": N}],
              "dst": dk, "src": srcs, "inputs": keys})
for j, (op, c) in enumerate(SH):
    name = f"shfl__{j}"
    K.append(f"""extern "C" __global__ void {name}(const unsigned* a, const unsigned* b, unsigned* out, unsigned* pred) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x; unsigned d, p;
  asm volatile("{{ .reg .pred q; {op} %0|q, %2, %3, {c}, -1; selp.u32 %1, 1, 0, q; }}" : "=r"(d), "=r"(p) : "r"(a[i]), "r"(b[i] & 31));
  out[i] = d; pred[i] = p;
}}""")
    M.append({"family": "shfl", "op": op, "c": c, "kernel": name, "grid": N // 256, "block": 256,
              "args": [{"in": "ia"}, {"in": "ib"}, {"out": "out", "dtype": "uint32", "count": N},
                       {"out": "pred", "dtype": "uint32", "count": N}]})
open("alu.cu", "w").write("\n\n".join(K) + "\n")
json.dump(M, open("manifest_alu.json", "w"), indent=0)
np.savez_compressed("alu_inputs.npz", **IN)
print(len(K), "kernels")
