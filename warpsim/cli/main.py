"""The ``warpsim`` command line.

Exit status: 0 success, 1 failure (a result differs from the GPU's, or the operation is not
modelled), 2 usage error (bad arguments, unknown opcode, malformed input).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _ins(opcode):
    from ..isa.parse import parse

    try:
        return parse(opcode)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


# --- list / show --------------------------------------------------------------

def cmd_list(a):
    from ..isa.catalog import CATALOG, WGMMA_CATALOG, WGMMA_SP_CATALOG

    n = 0
    pool = {"mma": CATALOG, "wgmma": WGMMA_CATALOG, "wgmma-sp": WGMMA_SP_CATALOG,
            "all": CATALOG + WGMMA_CATALOG + WGMMA_SP_CATALOG}[a.kind]
    for ins in pool:
        if a.shape and ins.shape != a.shape:
            continue
        if a.type and a.type not in (ins.atype, ins.btype, ins.ctype, ins.dtype):
            continue
        if a.sparse is not None and ins.is_sparse != a.sparse:
            continue
        if a.sm is not None and ins.min_sm > a.sm:
            continue
        if a.family and ins.family != a.family:
            continue
        if a.arch:
            from ..isa.archs import available

            try:
                if not available(ins, a.arch):
                    continue
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        n += 1
        if a.long and ins.is_wgmma:
            print(f"{ins.opcode:<80} sm_90a  PTX {ins.min_ptx}  128 threads")
        elif a.long:
            sel = f"  selectors {list(ins.selectors)}" if ins.is_sparse else ""
            where = "/".join(ins.targets) if ins.targets else f"sm_{ins.min_sm}"
            note = "  (ptxas-lenient)" if ins.lenient else ""
            print(f"{ins.opcode:<80} {where}  PTX {ins.min_ptx}{sel}{note}")
        else:
            print(ins.opcode)
    print(f"{n} opcode(s)", file=sys.stderr)
    return EXIT_OK if n else EXIT_FAIL


def cmd_show(a):
    from ..ptx.regfile import example_statement

    from ..isa.archs import TARGETS, WGMMA_TARGET, available, canonical
    from ..numerics.arch import STATUS

    ins = _ins(a.opcode)
    print(ins.describe())
    have = [t for t in TARGETS if available(ins, t)] or ([WGMMA_TARGET] if ins.is_wgmma else [])
    print("  targets (ptxas-checked): " + ", ".join(
        f"{t}{'' if STATUS[canonical(t)].startswith('verified') else '*'}" for t in have))
    print("  (* modelled from published measurements; unmarked: verified on hardware)")
    print()
    print("PTX:")
    if ins.is_wgmma:
        from ..ptx.warpgroup import example_program

        print("\n".join("  " + x for x in example_program(ins).splitlines()))
    else:
        print("  " + example_statement(ins))
    return EXIT_OK


# --- layout --------------------------------------------------------------------

def cmd_layout(a):
    from .svg import svg, text_grid, wmma_svg, wmma_text_grid

    if a.opcode.startswith("wmma"):
        try:
            if a.svg:
                with open(a.svg, "w") as f:
                    f.write(wmma_svg(a.opcode, a.operand, color_by=a.color_by))
                print(f"wrote {a.svg}", file=sys.stderr)
            if not a.svg or a.text:
                sys.stdout.write(wmma_text_grid(a.opcode, a.operand, width=a.width))
        except (ValueError, TypeError) as exc:
            raise UsageError(str(exc)) from None
        return EXIT_OK
    ins = _ins(a.opcode)
    if ins.is_wgmma and a.operand in ("a", "b") and (a.operand == "b" or a.desc or a.swizzle or a.major):
        return _layout_smem(ins, a)
    try:
        if a.svg:
            with open(a.svg, "w") as f:
                f.write(svg(ins, a.operand, a.selector, color_by=a.color_by))
            print(f"wrote {a.svg}", file=sys.stderr)
        if not a.svg or a.text:
            sys.stdout.write(text_grid(ins, a.operand, a.selector, width=a.width))
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK


def _layout_smem(ins, a):
    from .svg import smem_svg, smem_text
    from ..isa import smem as S

    trans = 1 if (a.major or "K") == "MN" else 0
    try:
        if a.desc:
            desc = int(a.desc, 0)
        else:
            rows = ins.m if a.operand == "a" else ins.n
            if trans and not ins.imm_trans:
                raise ValueError(f"{ins.opcode} reads K-major shared memory only")
            desc, _ = S.dense_layout(rows, ins.elem(a.operand).bits, "MN" if trans else "K", a.swizzle or "none")
        if trans and not ins.imm_trans:
            raise ValueError(f"{ins.opcode} reads K-major shared memory only")
        if a.svg:
            with open(a.svg, "w") as f:
                f.write(smem_svg(ins, a.operand, desc, trans=trans))
            print(f"wrote {a.svg}", file=sys.stderr)
        if not a.svg or a.text:
            sys.stdout.write(smem_text(ins, a.operand, desc, trans=trans))
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK


# --- run -----------------------------------------------------------------------

def _load(path):
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None


def _operand_words(ins, role, path, selector, e_given):
    """An operand from a .npy: register words (uint32, (32, words)) or a matrix (packed here).

    Returns (words, metadata or None); a logical sparse A is compressed for ``selector``."""
    from ..isa.layouts import pack
    from ..api.sparse import compress

    x = _load(path)
    if x.dtype == np.uint32 and x.shape == (32, ins.words(role)):
        return x, None
    try:
        if role == "a" and ins.is_sparse and not e_given and x.shape == (ins.m, ins.k):
            return compress(ins, x, selector)
        return pack(ins, role, x), None
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{path}: {exc}") from None


def _fmt_value(v):
    if isinstance(v, (np.floating, float)) or (hasattr(v, "dtype") and v.dtype.kind == "f"):
        return f"{float(v):.6g}"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if hasattr(v, "dtype") and v.dtype.kind not in "iub":
        return f"{f:.6g}"
    return str(int(f)) if f == int(f) else f"{f:.6g}"


def _matrix_lines(title, m):
    """Rows of a matrix as text lines, first line the title."""
    m = np.asarray(m)
    cells = [[_fmt_value(v) for v in row] for row in m]
    w = max((len(c) for row in cells for c in row), default=1)
    lines = [title] + [" ".join(c.rjust(w) for c in row) for row in cells]
    width = max(len(x) for x in lines)
    return [x.ljust(width) for x in lines]


def _side_by_side(blocks, gap=4):
    h = max(len(b) for b in blocks)
    out = []
    for i in range(h):
        parts = [(b[i] if i < len(b) else " " * len(b[0])) for b in blocks]
        out.append((" " * gap).join(parts).rstrip())
    return "\n".join(out)


def cmd_run(a):
    from ..api.mma import mma
    from ..hw.inputs import distributions, generate
    from ..isa.layouts import unpack
    from ..api.sparse import expand

    ins = _ins(a.opcode)
    if ins.is_wgmma:
        return _run_wgmma(ins, a)
    if a.selector not in ins.selectors:
        raise UsageError(f"selector {a.selector} is out of range for {ins.opcode}; allowed: {list(ins.selectors)}")
    dist = a.dist or distributions(ins)[0]
    if dist not in distributions(ins):
        raise UsageError(f"distribution {dist!r} is not one of {', '.join(distributions(ins))} for {ins.opcode}")
    gen = generate(ins, a.selector, dist, 1, a.seed)
    words = {r: gen[r][0] for r in gen}
    if a.e:
        if not ins.is_sparse:
            raise UsageError(f"{ins.opcode} is dense: it takes no metadata (--e)")
        e = _load(a.e)
        if e.dtype != np.uint32 or e.shape != (32,):
            raise UsageError(f"{a.e}: metadata must be uint32 of shape (32,), got {e.dtype} {e.shape}")
        words["e"] = e
    for role in "abc":
        path = getattr(a, role)
        if path:
            w, e = _operand_words(ins, role, path, a.selector, bool(a.e))
            words[role] = w
            if e is not None:
                words["e"] = e
            elif role == "a" and ins.is_sparse and not a.e:
                raise UsageError(f"{path}: sparse A given as register words or a compressed matrix needs --e E.npy "
                                 f"(metadata words); or give the logical {ins.m}x{ins.k} matrix")
    arch = a.arch or (ins.targets[0] if ins.targets else "sm_90")
    kw = {}
    if ins.block_scaled:   # scale registers from the generator (selectors 0); word 0 scale-a, word 1 scale-b
        kw = dict(scale_a=np.ascontiguousarray(words["s"][..., 0]), scale_b=np.ascontiguousarray(words["s"][..., 1]))
    try:
        d = mma(ins.opcode, words["a"], words["b"], words["c"], words.get("e"), selector=a.selector, arch=arch, **kw)
    except NotImplementedError as exc:
        print(f"warpsim: {exc}", file=sys.stderr)
        return EXIT_FAIL
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    words["d"] = d
    print(ins.opcode + (f"  (selector {a.selector})" if ins.is_sparse else ""))
    print()
    mats = {}
    for role in "abcd":
        mats[role] = unpack(ins, role, words[role])
    if ins.is_sparse:
        try:
            mats["a"] = expand(ins, words["a"], words["e"], a.selector)
            a_title = f"A ({ins.m}x{ins.k}, logical)"
        except ValueError:
            a_title = f"A ({ins.m}x{ins.k // 2}, compressed; metadata repeats an index)"
    else:
        a_title = "A ({}x{})".format(*ins.matrix_shape("a"))
    titles = {"a": a_title}
    for role in "bcd":
        titles[role] = "{} ({}x{})".format(role.upper(), *ins.matrix_shape(role))
    if a.values:
        for p in range(ins.products):
            if ins.products > 1:
                print(f"product {p}")
            pick = (lambda m: m[p]) if ins.products > 1 else (lambda m: m)
            blocks = [_matrix_lines(titles[r] + f" .{ins.elem(r).name}", pick(mats[r])) for r in "abcd"]
            print(_side_by_side(blocks))
            print()
    if a.words:
        roles = ["a", "b", "c"] + (["e"] if ins.is_sparse else []) + (["s"] if ins.block_scaled else []) + ["d"]
        head = "lane  " + "  ".join(
            (r.upper() + " words").ljust(9 * (1 if r == "e" else words[r].shape[-1]) - 1) for r in roles)
        print("register words (hex, per lane, in PTX operand order)")
        print(head.rstrip())
        for lane in range(32):
            parts = []
            for r in roles:
                w = words[r][lane]
                parts.append(" ".join(f"{int(x):08x}" for x in np.atleast_1d(w)))
            print(f"{lane:>4}  " + "  ".join(parts))
    if a.out:
        np.savez(a.out, **{r: words[r] for r in words})
        print(f"wrote {a.out}", file=sys.stderr)
    return EXIT_OK


def _run_wgmma(ins, a):
    from ..hw.inputs import distributions, float_elements, int_elements
    from ..isa.codec import to_values
    from ..api.wgmma import matmul_wgmma

    dist = a.dist or distributions(ins)[0]
    if dist not in distributions(ins):
        raise UsageError(f"distribution {dist!r} is not one of {', '.join(distributions(ins))} for {ins.opcode}")
    rng = np.random.default_rng(a.seed)
    mats = {}
    for role, shape, mrole in (("a", (ins.m, ins.k), "a"), ("b", (ins.k, ins.n), "b"), ("c", (ins.m, ins.n), "d")):
        path = getattr(a, role)
        t = ins.elem(mrole)
        if path:
            mats[role] = _load(path)
        else:
            gen = float_elements if t.is_float else int_elements
            bits = gen(t, dist, role, rng, shape[0] * shape[1]).reshape(shape)
            if role == "a" and ins.is_sparse:   # a random 2:4 (tf32 1:2) pattern: zero the dropped positions
                per, keep = (2, 1) if ins.atype == "tf32" else (4, 2)
                drop = np.argsort(rng.random((shape[0], shape[1] // per, per)), axis=-1)[..., keep:]
                g = bits.reshape(shape[0], shape[1] // per, per)
                np.put_along_axis(g, drop, 0, axis=-1)
            mats[role] = to_values(bits, t)
    if ins.is_sparse and a.selector not in ins.selectors:
        raise UsageError(f"selector {a.selector} is out of range for {ins.opcode}; allowed: {list(ins.selectors)}")
    try:
        d = matmul_wgmma(ins, mats["a"], mats["b"], mats["c"], swizzle=a.swizzle or "none",
                         selector=a.selector if ins.is_sparse else 0)
    except NotImplementedError as exc:
        print(f"warpsim: {exc}", file=sys.stderr)
        return EXIT_FAIL
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    print(ins.opcode + f"  (one warpgroup; A and B K-major in shared memory, swizzle {a.swizzle or 'none'})")
    print()
    if a.values:
        cols = min(ins.n, 8)
        blocks = [_matrix_lines(f"A ({ins.m}x{ins.k}) .{ins.atype}", mats["a"]),
                  _matrix_lines(f"B ({ins.k}x{ins.n}, first {cols} columns) .{ins.btype}", mats["b"][:, :cols]),
                  _matrix_lines(f"C ({ins.m}x{ins.n}, first {cols} columns)", mats["c"][:, :cols]),
                  _matrix_lines(f"D ({ins.m}x{ins.n}, first {cols} columns) .{ins.dtype}", d[:, :cols])]
        print(_side_by_side(blocks))
    if a.out:
        np.savez(a.out, a=mats["a"], b=mats["b"], c=mats["c"], d=d)
        print(f"wrote {a.out}", file=sys.stderr)
    return EXIT_OK


# --- ptx -----------------------------------------------------------------------

def _kernel_arg(spec):
    """--arg: FILE.npy, zeros:N[:dtype], or a number."""
    if spec.endswith(".npy"):
        return _load(spec)
    if spec.startswith("zeros:"):
        parts = spec.split(":")
        try:
            n = int(parts[1])
            dt = np.dtype(parts[2]) if len(parts) > 2 else np.dtype(np.uint32)
        except (ValueError, TypeError, IndexError):
            raise UsageError(f"--arg {spec}: expected zeros:N or zeros:N:DTYPE (e.g. zeros:1024:float32)") from None
        return np.zeros(n, dtype=dt)
    try:
        return int(spec, 0)
    except ValueError:
        pass
    try:
        return float(spec)
    except ValueError:
        raise UsageError(f"--arg {spec}: expected FILE.npy, zeros:N[:DTYPE] or a number") from None


def _dims_arg(text, what):
    try:
        v = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"--{what} expects N or X,Y[,Z], got {text!r}") from None
    return v if len(v) > 1 else v[0]


def cmd_ptx_module(a, text):
    from .. import ptx

    try:
        mod = ptx.load(text)
    except ptx.PTXError as exc:
        raise UsageError(str(exc)) from None
    entry = a.entry
    if entry is None:
        if len(mod.entries) != 1:
            raise UsageError(f"{a.file} has entries {mod.entries}: pick one with --entry")
        entry = mod.entries[0]
    if a.grid is None or a.block is None:
        raise UsageError("running a kernel needs --grid and --block (e.g. --grid 4,2 --block 128)")
    args = [_kernel_arg(s) for s in (a.arg or [])]
    try:
        mod.launch(entry, _dims_arg(a.grid, "grid"), _dims_arg(a.block, "block"), args, shared_bytes=a.shared,
                   arch=a.arch)
    except (ptx.PTXError, ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    _print_arrays(mod.params(entry), args, a.save)
    return EXIT_OK


def _print_arrays(params, args, save):
    """After a launch: each array argument's head, and with --save DIR each as DIR/PARAM.npy."""
    for i, ((name, typ), v) in enumerate(zip(params, args)):
        if not isinstance(v, np.ndarray):
            continue
        head = " ".join(str(x) for x in v.reshape(-1)[:8]) + (" ..." if v.size > 8 else "")
        print(f"{name} ({v.dtype}[{v.size}]): {head}")
        if save:
            import os
            os.makedirs(save, exist_ok=True)
            path = os.path.join(save, f"{name}.npy")
            np.save(path, v)
            print(f"  wrote {path}")


def cmd_cuda(a):
    """warpsim cuda FILE.cu --kernel NAME: compile with NVRTC (warpsim.cuda) and launch like `warpsim ptx`."""
    try:
        from .. import cuda
    except ImportError as exc:
        print(f"warpsim cuda: {exc}", file=sys.stderr)
        return EXIT_FAIL
    if not os.path.isfile(a.file):
        raise UsageError(f"cannot read {a.file}: no such file")
    options = [f"-D{d}" for d in a.define or []] + [f"-I{d}" for d in a.include or []] + list(a.opt or [])
    options += ["--use_fast_math"] if a.use_fast_math else []
    options += [f"-std={a.std}"] if a.std else []
    args = [_kernel_arg(s) for s in (a.arg or [])]
    try:
        mod = cuda.RawModule(path=a.file, options=options, arch=a.arch,
                             name_expressions=[a.kernel] if "<" in a.kernel else ())
        kernel = mod.get_function(a.kernel)
        kernel(_dims_arg(a.grid, "grid"), _dims_arg(a.block, "block"), tuple(args), shared_mem=a.shared)
    except cuda.CompileError as exc:
        print(f"warpsim cuda: {exc}", file=sys.stderr)
        return EXIT_FAIL
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    _print_arrays(mod.ptx.params(kernel.entry), args, a.save)
    return EXIT_OK


def cmd_ptx(a):
    from ..ptx.regfile import PTXError, Warp

    if a.file == "-":
        text = sys.stdin.read()
    else:
        try:
            with open(a.file) as f:
                text = f.read()
        except OSError as exc:
            raise UsageError(f"cannot read {a.file}: {exc}") from None
    if re.search(r"\.entry\s", text):
        return cmd_ptx_module(a, text)
    if a.warpgroup:
        from ..ptx.warpgroup import Warpgroup

        sm = _load(a.smem) if a.smem else None
        if sm is not None and (sm.dtype != np.uint8 or sm.ndim not in (1, 2)):
            raise UsageError(f"{a.smem}: shared memory must be uint8 of shape (bytes,) or (groups, bytes)")
        w = Warpgroup(a.warps, smem_bytes=0 if sm is None else sm.shape[-1], undefined=a.undefined, seed=a.seed,
                      arch="sm_90a" if a.arch == "sm_90" else a.arch)
        if sm is not None:
            w.smem[:] = sm
    else:
        w = Warp(a.warps, undefined=a.undefined, seed=a.seed, arch=a.arch)
    for spec in a.set or []:
        name, _, path = spec.partition("=")
        if not path:
            raise UsageError(f"--set expects NAME=FILE.npy, got {spec!r}")
        try:
            w.set(name, _load(path))
        except (ValueError, TypeError) as exc:
            raise UsageError(f"--set {spec}: {exc}") from None
    try:
        w.run(text)
    except NotImplementedError as exc:
        print(f"warpsim: {exc}", file=sys.stderr)
        return EXIT_FAIL
    except PTXError as exc:
        raise UsageError(str(exc)) from None
    names = a.print or w.names
    for n in names:
        if n not in w:
            raise UsageError(f"--print {n}: no such register after the snippet ran")
    units = w.groups if a.warpgroup else w.warps
    for warp in range(units):
        if units > 1:
            print(f"warp {warp}")
        cols = []
        for n in names:
            v = w.get(n)[warp]
            wd = {8: 16, 4: 8, 2: 4, 1: 1}[v.dtype.itemsize]
            cols.append((n, wd, v))
        print("lane  " + " ".join(n.rjust(wd) for n, wd, _ in cols))
        for lane in range(w.lanes):
            print(f"{lane:>4}  " + " ".join(f"{int(v[lane]):0{wd}x}" for _, wd, v in cols))
    return EXIT_OK


# --- verify / bench ------------------------------------------------------------------

def cmd_verify(a):
    from .verify import corpus_arch, default_corpus, replay, summary_table
    from ..hw import Corpus
    from ..numerics.arch import check_arch, status

    try:
        arch = check_arch(a.arch) if a.arch else corpus_arch(Corpus(a.corpus or default_corpus()).manifest)
        results = replay(a.corpus, match=tuple(a.match or ()), arch=arch, progress=not a.quiet)
    except (OSError, KeyError, ValueError) as exc:
        raise UsageError(f"cannot replay {a.corpus or 'the default corpus'}: {exc}") from None
    if not results:
        raise UsageError(f"no corpus entry matches {a.match}")
    print(f"model: {arch} ({status(arch)})")
    print(summary_table(results))
    differ = [r for r in results if r.differ]
    errors = [r for r in results if r.error]
    if errors:
        print(f"{len(errors)} entries not modelled yet (e.g. {errors[0].opcode}: {errors[0].error})")
    if differ:
        print(f"{len(differ)} entries differ from the GPU, e.g.:")
        for r in differ[:10]:
            print(f"  {r.opcode} selector {r.selector}: {r.differ} of {r.words} words; by distribution {r.by_distribution}")
    return EXIT_FAIL if differ or errors else EXIT_OK


def cmd_gemm(a):
    import time

    from . import gemm_report as gr
    from ..api.gemm import gemm

    ins = _ins(a.opcode)
    try:
        if a.a or a.b:
            if not (a.a and a.b):
                raise UsageError("give both --a and --b (.npy matrices), or neither (generated inputs)")
            A, B = _load(a.a), _load(a.b)
            C = _load(a.c) if a.c else np.zeros((A.shape[0], B.shape[1]), ins.elem("c").numpy_dtype)
            what = f"{a.a} x {a.b}" + (f" + {a.c}" if a.c else "")
        else:
            A, B, C = gr.inputs(ins, a.m, a.n, a.k, a.dist or ("normal" if ins.elem("a").is_float else "uniform"), a.seed)
            what = f"generated '{a.dist or ('normal' if ins.elem('a').is_float else 'uniform')}' inputs, seed {a.seed}"
        t0 = time.perf_counter()
        D = gemm(A, B, C, instruction=ins.opcode, arch=a.arch, split_k=a.split_k, promote_every=a.promote_every,
                 split_k_reduce=a.split_k_reduce, pad=a.pad, progress=a.progress)
        t1 = time.perf_counter()
        if a.progress:
            print("exact reference ...", file=sys.stderr, flush=True)
        st = gr.report(np.asarray(A), np.asarray(B), np.asarray(C), D, ins)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    except NotImplementedError as exc:
        print(f"warpsim gemm: not modelled: {exc}", file=sys.stderr)
        return EXIT_FAIL
    M, K = np.shape(A)
    N = np.shape(B)[1]
    opts = "".join([f", split_k {a.split_k} ({a.split_k_reduce})" if a.split_k > 1 else "",
                    f", promote_every {a.promote_every}" if a.promote_every else ""])
    print(f"{ins.opcode}\n{M}x{N}x{K} ({what}){opts}; D in {ins.dtype}; emulated in {t1 - t0:.2f} s")
    print(gr.table(st))
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(gr.histogram_svg(st, f"{ins.shape} {ins.atype}->{ins.dtype}, {M}x{N}x{K}"))
        print(f"histogram: {a.svg}")
    if a.out:
        np.save(a.out, D)
    return EXIT_OK


def _dot_chains(records):
    """Group recorded tl.dot calls into accumulator chains (a dot whose C is an earlier dot's D extends it)."""
    chains, by_out = [], {}
    for r in records:
        ch = by_out.pop(id(r["c"]), None)
        if ch is None:
            ch = dict(lowering=r["lowering"], a=[], b=[], c=r["c"], launch=r["launch"], types=(r["atype"], r["out"]))
            chains.append(ch)
        ch["a"].append(r["a"])
        ch["b"].append(r["b"])
        ch["d"] = r["d"]
        by_out[id(r["d"])] = ch
    return chains


def _triton_run(a):
    """``warpsim triton FILE.py --run``: the script under the warpsim Triton driver (compiled kernels, every word)."""
    import runpy

    try:
        import warpsim.triton as wt
        wt.device(a.arch, a.device)
    except ImportError as exc:
        raise UsageError(f"needs the optional extra warpsim[triton] (triton, torch): {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not os.path.isfile(a.file):
        raise UsageError(f"no such file: {a.file}")
    old_argv, old_env = sys.argv, os.environ.get("WARPSIM_TRITON")
    sys.argv = [a.file] + list(a.args)
    os.environ["WARPSIM_TRITON"] = a.arch        # child processes the script starts (entry point) too
    try:
        with wt.device(a.arch, a.device):
            runpy.run_path(a.file, run_name="__main__")
    finally:
        sys.argv = old_argv
        if old_env is None:
            os.environ.pop("WARPSIM_TRITON", None)
        else:
            os.environ["WARPSIM_TRITON"] = old_env
    return 0


def cmd_triton(a):
    import runpy

    from . import gemm_report as gr
    from ..isa.parse import parse
    if a.run:
        return _triton_run(a)
    os.environ["TRITON_INTERPRET"] = "1"        # before triton is imported: its kernels then build for the interpreter
    try:
        import warpsim.triton as wt
    except ImportError as exc:
        raise UsageError(f"needs the optional extra warpsim[triton] (triton, torch): {exc}") from None
    if not os.path.isfile(a.file):
        raise UsageError(f"no such file: {a.file}")
    try:
        ctx = wt.exact(arch=a.arch, device=a.device, num_warps=a.num_warps, path=a.path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    old_argv = sys.argv
    sys.argv = [a.file] + list(a.args)
    try:
        with ctx, wt.record() as records:
            runpy.run_path(a.file, run_name="__main__")
    except NotImplementedError as exc:
        print(f"warpsim triton: not modelled: {exc}", file=sys.stderr)
        return EXIT_FAIL
    finally:
        sys.argv = old_argv
    chains = _dot_chains(records)
    print(f"warpsim triton: {len(records)} tl.dot calls in {len(chains)} accumulator chains, target {a.arch}")
    groups = {}
    for ch in chains:
        lw = ch["lowering"]
        groups.setdefault((ch["launch"][0] if ch["launch"] else "?", lw, ch["types"]), []).append(ch)
    for (kernel, lw, (at, out)), chs in groups.items():
        merged = None
        opname = lw.instruction or "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
        ins = parse(opname)
        for ch in chs:
            A = np.concatenate(ch["a"], axis=-1)
            B = np.concatenate(ch["b"], axis=-2)
            As, Bs = wt._as_operand(A, at), wt._as_operand(B, at)
            if A.ndim != 2:
                continue
            st = gr.report(np.asarray(As, np.float64) if ins.elem("d").is_float else As,
                           np.asarray(Bs, np.float64) if ins.elem("d").is_float else Bs, ch["c"], ch["d"], ins)
            if merged is None:
                merged = dict(st)
                merged["eq_count"] = st["equal"] * st["ulp"].size
            else:
                for key in ("outputs", "finite", "nonfinite", "nonfinite_equal"):
                    merged[key] += st[key]
                merged["eq_count"] += st["equal"] * st["ulp"].size
                merged["ulp"] = np.concatenate([merged["ulp"], st["ulp"]])
                merged["rel"] = np.concatenate([merged["rel"], st["rel"]])
        if merged is None:
            continue
        merged["equal"] = merged["eq_count"] / max(1, merged["ulp"].size)
        what = lw.instruction or "f32 FMA chain" if lw.kind != "tf32x3" else f"tf32x3 ({lw.instruction})"
        print(f"\nkernel {kernel}: {at} -> {out}, {lw.path} path, {what}"
              + (f", promote_every {lw.promote_every}" if lw.promote_every else "")
              + f"; {len(chs)} chains (numerics of {lw.arch})")
        print(gr.table(merged))
    return EXIT_OK


def cmd_bench(argv):
    try:
        from . import bench as _bench
    except ImportError as exc:
        print(f"warpsim bench: the benchmarks are not available in this installation ({exc})", file=sys.stderr)
        return EXIT_FAIL
    rc = _bench.main(list(argv))
    return int(rc or 0)


# --- parser --------------------------------------------------------------------

def build_parser():
    p = argparse.ArgumentParser(prog="warpsim", description="Bit-exact CPU emulation of NVIDIA PTX warp-level mma / mma.sp.",
                                epilog="Exit status: 0 ok, 1 failure (results differ / not modelled), 2 usage error.")
    from .. import __version__

    p.add_argument("--version", action="version", version=f"warpsim {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    sub.required = True

    s = sub.add_parser("list", help="list catalog opcodes", description="List the opcodes of the catalog, filtered.")
    s.add_argument("--shape", help="e.g. m16n8k16")
    s.add_argument("--type", help="an element type used by any operand, e.g. f16, s8, e4m3")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--sparse", dest="sparse", action="store_true", default=None, help="only mma.sp opcodes")
    g.add_argument("--dense", dest="sparse", action="store_false", help="only dense opcodes")
    s.add_argument("--sm", type=int, help="only opcodes available on this sm (e.g. 80)")
    s.add_argument("--family", help="catalog family, e.g. f16, bf16, tf32, f64, fp8, int8, int4, b1, f16x4")
    s.add_argument("-l", "--long", action="store_true", help="also print lowest sm, PTX ISA version and selectors")
    s.add_argument("--arch", help="only opcodes of this target: sm_90 (or sm_80, ...); sm_120a adds the kind:: forms")
    s.add_argument("--kind", choices=["mma", "wgmma", "wgmma-sp", "all"], default="all",
                   help="instruction class: warp-level mma, warpgroup wgmma.mma_async, sparse wgmma.mma_async.sp, "
                        "or all of them (default)")
    s.set_defaults(fn=cmd_list)

    s = sub.add_parser("show", help="describe one opcode", description="Describe an opcode: types, shapes, registers, an example PTX statement.")
    s.add_argument("opcode")
    s.set_defaults(fn=cmd_show)

    s = sub.add_parser("layout", help="draw an operand's fragment layout",
                       description="Print an operand's fragment layout as a grid (T<lane>:<element>); optionally write an SVG.")
    s.add_argument("opcode", help="an mma opcode, or a wmma form such as wmma.m16n16k16.f16 (any wmma.load/.store opcode)")
    s.add_argument("operand", type=str.lower, choices=["a", "b", "c", "d"])
    s.add_argument("--svg", metavar="FILE", help="write an SVG picture to FILE (the text grid is then not printed unless --text)")
    s.add_argument("--text", action="store_true", help="print the text grid even with --svg")
    s.add_argument("--selector", type=int, default=0, help="sparsity selector (sparse A: which metadata lanes)")
    s.add_argument("--color-by", choices=["lane", "group"], default="lane", help="SVG colours per lane or per group of 4 lanes")
    s.add_argument("--width", type=int, default=120, help="terminal width for the text grid (default 120)")
    s.add_argument("--desc", metavar="0x...", help="wgmma A/B: draw the shared memory this 64-bit descriptor reads")
    s.add_argument("--swizzle", choices=["none", "32B", "64B", "128B"],
                   help="wgmma A/B without --desc: a dense layout with this swizzle (default none)")
    s.add_argument("--major", choices=["K", "MN"], help="wgmma A/B: K-major (default) or MN-major (imm-trans = 1)")
    s.set_defaults(fn=cmd_layout)

    s = sub.add_parser("run", help="run one mma on example or given data",
                       description="Run one mma; print A, B, C, D as matrices and as register words. "
                                   "Operands default to seeded random data; a .npy may hold register words "
                                   "(uint32, shape (32, words)) or a matrix (sparse A: the logical matrix).")
    s.add_argument("opcode")
    for r in "abc":
        s.add_argument(f"--{r}", metavar=f"{r.upper()}.npy", help=f"operand {r.upper()}")
    s.add_argument("--e", metavar="E.npy", help="sparse metadata words, uint32 shape (32,)")
    s.add_argument("--selector", type=int, default=0)
    s.add_argument("--seed", type=int, default=0, help="seed of the random example data (default 0)")
    s.add_argument("--dist", help="input distribution of the random data (default: the first for the type)")
    s.add_argument("--no-values", dest="values", action="store_false", help="do not print the matrices")
    s.add_argument("--no-words", dest="words", action="store_false", help="do not print the register words")
    s.add_argument("--out", metavar="FILE.npz", help="save the register words (a, b, c, [e,] d); wgmma: the matrices")
    s.add_argument("--arch", default=None, help="target model: sm_70, sm_75, sm_80, sm_86, sm_89, sm_90 (verified "
                                                 "on hardware), sm_100, sm_120, sm_120a (modelled); default sm_90, or "
                                                 "sm_120a for the sm_120a-only kind:: forms")
    s.add_argument("--swizzle", choices=["none", "32B", "64B", "128B"], help="wgmma: swizzle of the shared-memory operands")
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("ptx", help="run a PTX snippet or a kernel's .ptx file",
                       description="A snippet (statements): run it through the register file and print the registers "
                                   "(hex, per lane).  A module (.entry): launch an entry over --grid CTAs of --block "
                                   "threads with --arg kernel arguments in .param order; print (and --save) the arrays.")
    s.add_argument("file", help="PTX file, or - for standard input")
    s.add_argument("--warps", type=int, default=1)
    s.add_argument("--set", action="append", metavar="NAME=FILE.npy", help="initialise a register from a .npy (repeatable)")
    s.add_argument("--undefined", choices=["error", "zero", "random"], default="error",
                   help="what reading a never-written register does (default: error)")
    s.add_argument("--seed", type=int, default=0, help="seed for --undefined random")
    s.add_argument("--print", action="append", metavar="REG", help="print only these registers (repeatable)")
    s.add_argument("--arch", default="sm_90", help="target model: sm_70, sm_75, sm_80, sm_86, sm_89, sm_90 (verified "
                                                 "on hardware), sm_100, sm_120 (modelled)")
    s.add_argument("--entry", help="kernel entry to launch (default: the module's only entry)")
    s.add_argument("--grid", help="grid of CTAs: N or X,Y[,Z]")
    s.add_argument("--block", help="threads per CTA: N or X,Y[,Z]")
    s.add_argument("--arg", action="append", metavar="ARG",
                   help="kernel argument, in .param order (repeatable): FILE.npy, zeros:N[:DTYPE] or a number")
    s.add_argument("--shared", type=int, default=0, help="dynamic shared memory bytes per CTA")
    s.add_argument("--save", metavar="DIR", help="write every array argument after the run to DIR/NAME.npy")
    s.add_argument("--warpgroup", action="store_true",
                   help="run as warpgroups of 128 threads with shared memory (wgmma.fence / mma_async / commit_group / "
                        "wait_group, ld/st.shared and every instruction a warp runs); --warps then counts warpgroups")
    s.add_argument("--smem", metavar="SMEM.npy", help="--warpgroup: initial shared memory, uint8 (bytes,) or (groups, bytes)")
    s.set_defaults(fn=cmd_ptx)

    s = sub.add_parser("cuda", help="compile a CUDA C++ kernel with NVRTC and run it (warpsim[cuda])",
                       description="Compile FILE.cu with NVRTC (nvcc's implicit includes and option spellings) and launch "
                                   "--kernel over --grid CTAs of --block threads with --arg arguments in parameter order; "
                                   "print (and --save) the arrays.  Needs the cuda extra: pip install 'warpsim[cuda]'.")
    s.add_argument("file", metavar="FILE.cu")
    s.add_argument("--kernel", required=True, help="kernel name (extern \"C\" name, or a template instantiation "
                                                   "such as 'scale<float, 4>')")
    s.add_argument("--grid", required=True, help="grid of CTAs: N or X,Y[,Z]")
    s.add_argument("--block", required=True, help="threads per CTA: N or X,Y[,Z]")
    s.add_argument("--arg", action="append", metavar="ARG",
                   help="kernel argument, in parameter order (repeatable): FILE.npy, zeros:N[:DTYPE] or a number "
                        "(converted to the parameter's type)")
    s.add_argument("-D", dest="define", action="append", metavar="NAME[=VALUE]", help="define a macro")
    s.add_argument("-I", dest="include", action="append", metavar="DIR", help="add an include directory")
    s.add_argument("--use_fast_math", action="store_true", help="as nvcc --use_fast_math")
    s.add_argument("--std", metavar="c++17", help="C++ dialect (default c++17)")
    s.add_argument("--opt", action="append", metavar="OPTION", help="another nvcc/NVRTC option, e.g. --opt=-lineinfo")
    s.add_argument("--shared", type=int, default=0, help="dynamic shared memory bytes per CTA")
    s.add_argument("--arch", default="sm_90a", help="target (default sm_90a)")
    s.add_argument("--save", metavar="DIR", help="write every array argument after the run to DIR/NAME.npy")
    s.set_defaults(fn=cmd_cuda)

    s = sub.add_parser("verify", help="replay a golden-vector corpus",
                       description="Replay a captured corpus through warpsim and compare every word; exit 1 if any differs.")
    s.add_argument("--corpus", metavar="PATH", help="corpus .npz (default: the H100 corpus in tests/golden)")
    s.add_argument("--match", action="append", metavar="TEXT", help="only opcodes containing TEXT (repeatable)")
    s.add_argument("--arch", default=None, help="model to compare with (default: the architecture the corpus was "
                                                "captured on; sm_70 ... sm_120)")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    s.set_defaults(fn=cmd_verify)

    s = sub.add_parser("gemm", help="numerics report of a whole GEMM",
                       description="Emulate A @ B + C as a kernel's main loop computes it with one instruction "
                                   "(warpsim.gemm) and report how far it is from the exactly rounded product: ulp "
                                   "distance and relative error percentiles, bits lost, an SVG histogram.")
    s.add_argument("opcode")
    s.add_argument("--m", type=int, default=256, help="rows of A (default 256)")
    s.add_argument("--n", type=int, default=256, help="columns of B (default 256)")
    s.add_argument("--k", type=int, default=1024, help="inner dimension (default 1024)")
    s.add_argument("--dist", help="input distribution as in the corpus (float: normal, finite, special, mixed, "
                                  "spread, tiny; int: uniform, extreme, near_limit); default normal / uniform")
    s.add_argument("--seed", type=int, default=0)
    for r in "abc":
        s.add_argument(f"--{r}", metavar=f"{r.upper()}.npy", help=f"matrix {r.upper()} instead of generated inputs")
    s.add_argument("--split-k", type=int, default=1)
    s.add_argument("--split-k-reduce", choices=["serial", "parallel"], default="serial")
    s.add_argument("--promote-every", type=int, default=None, help="promotion interval in k elements (f32 accumulators)")
    s.add_argument("--pad", action="store_true", help="zero-pad M, N, K to the tile")
    s.add_argument("--svg", metavar="FILE", help="write the ulp histogram as SVG")
    s.add_argument("--out", metavar="D.npy", help="save D")
    s.add_argument("--no-progress", dest="progress", action="store_false", help="no progress line on stderr")
    s.add_argument("--arch", default="sm_90")
    s.set_defaults(fn=cmd_gemm)

    s = sub.add_parser("triton", help="run a Triton script under the exact interpreter and report tl.dot numerics "
                                      "(--run: under the warpsim Triton driver)",
                       description="Run FILE.py with TRITON_INTERPRET=1 and warpsim.triton.exact: every tl.dot computes what "
                                   "the kernel compiled for --arch computes; then print, per kernel and lowering, the "
                                   "numerics report of warpsim gemm (each accumulator chain against the exactly "
                                   "rounded float64 product).")
    s.add_argument("file", metavar="FILE.py")
    s.add_argument("args", nargs="*", help="arguments passed to the script")
    s.add_argument("--arch", default="sm_90a", help="Triton target: sm_80, sm_86, sm_89, sm_90a, sm_120 (default sm_90a)")
    s.add_argument("--device", default=None, help="the GPU running the code when not the target's own (e.g. sm_90a)")
    s.add_argument("--num-warps", type=int, default=None, help="pin num_warps for the lowering rule (default: the launch's)")
    s.add_argument("--path", choices=["auto", "mma", "wgmma"], default="auto", help="pin the lowering path (sm_90a)")
    s.add_argument("--run", action="store_true",
                   help="run the compiled kernels instead: Triton compiles for --arch and warpsim runs the PTX (the "
                        "warpsim.triton.device driver; every word, no report)")
    s.set_defaults(fn=cmd_triton)

    sub.add_parser("bench", help="benchmarks (arguments are passed on; see `warpsim bench --help`)", add_help=False)
    return p


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        return cmd_bench(argv[1:])
    p = build_parser()
    try:
        a = p.parse_args(argv)
    except SystemExit as exc:   # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return a.fn(a)
    except UsageError as exc:
        print(f"warpsim {a.cmd}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
