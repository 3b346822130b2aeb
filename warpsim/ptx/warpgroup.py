"""A warpgroup (128 threads) with shared memory that executes ``wgmma`` statements as written in a kernel.

>>> import numpy as np, warpsim
>>> from warpsim.isa import smem
>>> g = warpsim.Warpgroup(smem_bytes=4096)
>>> A = np.ones((64, 16), np.float16); B = np.full((16, 8), 2, np.float16)
>>> da, db = smem.encode_descriptor(0, 128, 256), smem.encode_descriptor(2048, 128, 256)
>>> smem.write_operand(g.smem, da, A.view(np.uint16), 16); smem.write_operand(g.smem, db, B.T.view(np.uint16), 16)
>>> _ = g.run(f'''
...     mov.b64 %rd0, {da};
...     mov.b64 %rd1, {db};
...     wgmma.fence.sync.aligned;
...     wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f0, %f1, %f2, %f3}}, %rd0, %rd1, 0, 1, 1, 0, 0;
...     wgmma.commit_group.sync.aligned;
...     wgmma.wait_group.sync.aligned 0;
... ''')
>>> float(g.get("%f0").view(np.float32)[0, 0])
32.0

Statements: ``wgmma.fence.sync.aligned``, ``wgmma.mma_async...`` (every opcode of the catalog, A
as a register vector or a ``%rd`` descriptor register, B a ``%rd`` descriptor register, scale-d a
predicate register or the immediate 0/1, then the opcode's immediates), ``wgmma.commit_group.sync.aligned``,
``wgmma.wait_group.sync.aligned N``, ``mov`` (as in :class:`warpsim.Warp`), ``setp.{eq,ne}.{b32,u32,s32}
%p, %r, imm``, ``st.shared.{b32,u32,s32,f32,b64,u64}`` ``[%r]``/``[%r+imm]``/``[imm]`` (every thread
stores), ``.reg`` declarations and comments.

The asynchrony is modelled as the PTX ISA defines it, and what it leaves undefined is an error
(:class:`warpsim.PTXError` naming both statements): reading or writing an in-flight wgmma's
accumulator registers, or writing its A registers, with any statement other than a wgmma
chained on the same accumulator; writing shared memory an in-flight wgmma reads; a wgmma whose
registers were written since the last ``wgmma.fence``.  A wgmma is in flight from its issue
until a ``wgmma.wait_group`` that covers its committed group.  Results are computed at issue
(equal to the GPU's whenever no hazard is reported).
"""

from __future__ import annotations

import re

import numpy as np

from .regfile import Warp
from .syntax import PTXError, parse_int as _parse_int, split_operands as _split_operands, statements as _statements

__all__ = ["Warpgroup"]

_ST_TYPES = {"b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}
_ADDR = re.compile(r"\[\s*(%[a-z]+[0-9]*)?\s*(?:\+?\s*(-?(?:0x[0-9a-fA-F]+|[0-9]+)))?\s*\]\Z")


class _Op:
    def __init__(self, line, stmt, d, a, reads):
        self.line, self.stmt, self.d, self.a, self.reads = line, stmt, d, a, reads
        self.group = None   # index of its commit group, None while uncommitted


class Warpgroup(Warp):
    """``groups`` independent warpgroups of 128 threads, each with ``smem_bytes`` of shared memory.

    The shared memory is :attr:`smem` (uint8, (groups, bytes), shared addresses from 0) and may be
    written directly between runs (:meth:`write_smem` checks it against in-flight wgmmas).
    undefined / seed: as for :class:`warpsim.Warp`.  arch: passed to :func:`warpsim.wgmma`.
    """

    lanes = 128
    _unit = "groups"

    def __init__(self, groups: int = 1, *, smem_bytes: int = 0, undefined: str = "error", seed: int = 0,
                 arch: str = "sm_90a"):
        super().__init__(groups, undefined=undefined, seed=seed, arch=arch)
        if isinstance(smem_bytes, bool) or not isinstance(smem_bytes, (int, np.integer)) or smem_bytes < 0:
            raise ValueError(f"smem_bytes must be a non-negative integer, got {smem_bytes!r}")
        self.smem = np.zeros((self.warps, int(smem_bytes)), dtype=np.uint8)
        self._pending: list[_Op] = []
        self._ngroups = 0
        self._unfenced: dict[str, tuple] = {}   # register -> (line, stmt) of its last non-wgmma write

    def __repr__(self):
        return f"Warpgroup(groups={self.warps}, registers={len(self._regs)}, smem_bytes={self.smem.shape[1]})"

    @property
    def groups(self) -> int:
        return self.warps

    @property
    def in_flight(self) -> list[str]:
        """Statements of the wgmmas still in flight."""
        return [op.stmt for op in self._pending]

    # --- hazards ------------------------------------------------------------

    def _conflict(self, regs, line, stmt, what, allow_chain=None):
        for op in self._pending:
            for r in regs:
                if r in op.d and not (allow_chain is not None and tuple(allow_chain) == op.d):
                    raise PTXError(f"{what} accumulator register {r} of a wgmma that is still in flight "
                                   f"(line {op.line}: {op.stmt}); wait for it first with wgmma.commit_group and "
                                   "wgmma.wait_group", line=line, statement=stmt, token=r)
                if r in op.a and what != "reads":
                    raise PTXError(f"{what} A register {r} of a wgmma that is still in flight "
                                   f"(line {op.line}: {op.stmt})", line=line, statement=stmt, token=r)

    def _smem_conflict(self, lo, hi, line, stmt):
        for op in self._pending:
            if ((op.reads >= lo) & (op.reads < hi)).any():
                raise PTXError(f"writes shared memory [{lo}, {hi}) that a wgmma still in flight reads "
                               f"(line {op.line}: {op.stmt}); wait for it first", line=line, statement=stmt)

    def write_smem(self, offset: int, data) -> None:
        """Write bytes into every group's shared memory at ``offset`` (checked against in-flight wgmmas)."""
        data = np.asarray(data, dtype=np.uint8)
        n = data.shape[-1]
        if offset < 0 or offset + n > self.smem.shape[1]:
            raise ValueError(f"write of {n} bytes at {offset} is outside shared memory ({self.smem.shape[1]} bytes)")
        self._smem_conflict(offset, offset + n, None, f"write_smem({offset}, {n} bytes)")
        self.smem[:, offset:offset + n] = data

    def set(self, name, values):
        self._conflict([name], None, f"set({name!r})", "overwrites")
        super().set(name, values)
        self._unfenced[name] = (None, f"set({name!r})")

    def get(self, name):
        self._conflict([name], None, f"get({name!r})", "reads")
        return super().get(name)

    # --- statements ---------------------------------------------------------

    def _statement(self, line, stmt):
        if stmt.startswith(".reg"):
            return
        parts = stmt.split(None, 1)
        op = parts[0]
        rest = parts[1] if len(parts) > 1 else ""
        if op == "wgmma.fence.sync.aligned":
            self._unfenced.clear()
            return
        if op == "wgmma.commit_group.sync.aligned":
            for p in self._pending:
                if p.group is None:
                    p.group = self._ngroups
            self._ngroups += 1
            return
        if op == "wgmma.wait_group.sync.aligned":
            n = _parse_int(rest.strip())
            if n is None or n < 0:
                raise PTXError("wgmma.wait_group takes a non-negative integer immediate", line=line, statement=stmt)
            groups = sorted({p.group for p in self._pending if p.group is not None})
            done = set(groups[:max(0, len(groups) - n)])
            self._pending = [p for p in self._pending if p.group is None or p.group not in done]
            return
        if op.startswith("wgmma.") and op.split(".")[1] in ("fence", "commit_group", "wait_group"):
            raise PTXError(f"'{op}': write it as {'.'.join(op.split('.')[:2])}.sync.aligned", line=line, statement=stmt,
                           token=op)
        operands = _split_operands(rest, line, stmt)
        if op.startswith("wgmma.mma_async"):
            return self._wgmma(line, stmt, op, operands)
        if op.startswith("mov"):
            regs = [o for o in operands if isinstance(o, str) and o.startswith("%")]
            if regs:
                self._conflict(regs[:1], line, stmt, "overwrites")
                self._conflict(regs[1:], line, stmt, "reads")
            super()._mov(line, stmt, op, operands)
            if regs:
                self._unfenced[regs[0]] = (line, stmt)
            return
        if op.startswith("setp."):
            return self._setp(line, stmt, op, operands)
        if op.startswith("st.shared"):
            return self._st(line, stmt, op, operands)
        if op.startswith("mma"):
            raise PTXError("warp-level mma runs in warpsim.Warp; a Warpgroup executes wgmma statements",
                           line=line, statement=stmt, token=op)
        raise PTXError(f"unsupported instruction '{op}': a Warpgroup executes wgmma.fence / mma_async / commit_group / "
                       "wait_group, mov, setp.eq/ne and st.shared", line=line, statement=stmt, token=op)

    def _setp(self, line, stmt, op, operands):
        toks = op.split(".")
        if len(toks) != 3 or toks[1] not in ("eq", "ne") or toks[2] not in ("b32", "u32", "s32"):
            raise PTXError("supported: setp.eq/ne.b32/u32/s32 %p, %r, immediate", line=line, statement=stmt, token=op)
        if len(operands) != 3 or not isinstance(operands[0], str) or not operands[0].startswith("%p"):
            raise PTXError(f"{op} takes a predicate register, a register and an immediate", line=line, statement=stmt)
        self._conflict([operands[1]], line, stmt, "reads")
        v = self._read(operands[1], line, stmt)
        imm = _parse_int(operands[2])
        if imm is None:
            raise PTXError("the comparison operand must be an integer immediate", line=line, statement=stmt,
                           token=operands[2])
        res = (v == np.uint32(imm & 0xFFFFFFFF)) if toks[1] == "eq" else (v != np.uint32(imm & 0xFFFFFFFF))
        self._regs[operands[0]] = res.astype(np.uint32)

    def _st(self, line, stmt, op, operands):
        toks = op.split(".")
        if len(toks) != 3 or toks[2] not in _ST_TYPES:
            raise PTXError("supported: st.shared.{" + ",".join(_ST_TYPES) + "} [address], %register",
                           line=line, statement=stmt, token=op)
        size = _ST_TYPES[toks[2]]
        if len(operands) != 2 or not isinstance(operands[0], str):
            raise PTXError(f"{op} takes [address], register", line=line, statement=stmt, token=op)
        m = _ADDR.match(operands[0].replace(" ", ""))
        if not m:
            raise PTXError("address must be [%r], [%r+imm] or [imm]", line=line, statement=stmt, token=operands[0])
        base = self._read(m.group(1), line, stmt).astype(np.int64) if m.group(1) else np.zeros((self.warps, 128), np.int64)
        addr = base + (int(m.group(2), 0) if m.group(2) else 0)
        if (addr % size).any() or addr.min() < 0 or addr.max() + size > self.smem.shape[1]:
            raise PTXError(f"st.shared addresses must be {size}-byte aligned and inside shared memory "
                           f"({self.smem.shape[1]} bytes)", line=line, statement=stmt, token=operands[0])
        self._conflict([operands[1]], line, stmt, "reads")
        val = self._read(operands[1], line, stmt).astype(np.uint64)
        for lo in np.unique(addr):
            self._smem_conflict(int(lo), int(lo) + size, line, stmt)
        byts = ((val[..., None] >> (np.arange(size, dtype=np.uint64) * np.uint64(8))) & np.uint64(0xFF)).astype(np.uint8)
        g = np.arange(self.warps)[:, None, None]
        self.smem[g, addr[..., None] + np.arange(size)] = byts

    def _wgmma(self, line, stmt, op, operands):
        from .._wgmma import _instruction, operands as decode, compute, pack_d

        try:
            ins = _instruction(op)
        except ValueError as exc:
            raise PTXError(str(exc), line=line, statement=stmt, token=op) from None
        imms_n = (2 if ins.imm_scale else 0)
        reg_a = isinstance(operands[1], list) if len(operands) > 1 else False
        if ins.imm_trans:
            imms_n += 1 if reg_a else 2
        sp = 2 if ins.is_sparse else 0   # sparse: sp-meta (register) and sp-sel (immediate) before scale-d
        need = 4 + sp + imms_n
        names = ["imm-scale-a", "imm-scale-b"] if ins.imm_scale else []
        names += (["imm-trans-b"] if reg_a else ["imm-trans-a", "imm-trans-b"]) if ins.imm_trans else []
        if len(operands) != need:
            raise PTXError(f"{ins.opcode} takes {need} operands: {{d}}, {'{a}' if reg_a else 'a-desc'}, b-desc, "
                           + ("sp-meta, sp-sel, " if sp else "") + "scale-d"
                           + "".join(", " + n for n in names) + f"; got {len(operands)}", line=line, statement=stmt, token=op)
        meta, sel = [], 0
        if sp:
            meta = [operands[3]]
            if not isinstance(operands[3], str) or not operands[3].startswith("%"):
                raise PTXError("sp-meta must be a 32-bit register", line=line, statement=stmt, token=str(operands[3]))
            self._check_reg(operands[3], 32, line, stmt, "the sparsity metadata")
            sel = _parse_int(operands[4]) if isinstance(operands[4], str) else None
            if sel not in ins.selectors:
                raise PTXError(f"sp-sel of {ins.opcode} must be an immediate in {list(ins.selectors)}", line=line,
                               statement=stmt, token=str(operands[4]))
            operands = operands[:3] + operands[5:]
        dregs = operands[0] if isinstance(operands[0], list) else [operands[0]]
        if len(dregs) != ins.words("d"):
            raise PTXError(f"D of {ins.opcode} needs {ins.words('d')} registers, got {len(dregs)}", line=line,
                           statement=stmt, token=dregs[0])
        for r in dregs:
            self._check_reg(r, 32, line, stmt, "operand D")
        aregs = operands[1] if reg_a else []
        if reg_a and len(aregs) != ins.words("a"):
            raise PTXError(f"register A of {ins.opcode} needs {ins.words('a')} registers, got {len(aregs)}",
                           line=line, statement=stmt, token=aregs[0])
        for r in aregs:
            self._check_reg(r, 32, line, stmt, "operand A")
        for r in ([] if reg_a else [operands[1]]) + [operands[2]]:
            self._check_reg(r, 64, line, stmt, "a matrix descriptor")
        # hazards: the accumulator may be shared only with in-flight wgmmas chained on the same registers
        self._conflict(dregs, line, stmt, "uses", allow_chain=dregs)
        self._conflict(aregs + meta, line, stmt, "reads")
        for r in dregs + aregs + meta + ([] if reg_a else [operands[1]]) + [operands[2]]:
            if r in self._unfenced:
                wl, ws = self._unfenced[r]
                where = f"line {wl}: {ws}" if wl is not None else ws
                raise PTXError(f"register {r} was written ({where}) after the last wgmma.fence; issue "
                               "wgmma.fence.sync.aligned before this wgmma.mma_async", line=line, statement=stmt, token=r)
        sd_tok = operands[3]
        if isinstance(sd_tok, str) and sd_tok.startswith("%p"):
            sd = self._read(sd_tok, line, stmt)[:, 0].astype(np.int64)
        else:
            v = _parse_int(sd_tok) if isinstance(sd_tok, str) else None
            if v not in (0, 1):
                raise PTXError("scale-d must be a predicate register or 0/1", line=line, statement=stmt, token=sd_tok)
            sd = v
        imm = {}
        for n, t in zip(names, operands[4:]):
            v = _parse_int(t) if isinstance(t, str) else None
            allowed = (1, -1) if "scale" in n else (0, 1)
            if v not in allowed:
                raise PTXError(f"{n} must be one of {list(allowed)}", line=line, statement=stmt, token=t)
            imm[n] = v
        zero = np.zeros((self.warps, self.lanes), np.uint32)
        no_c = isinstance(sd, int) and sd == 0   # D = A x B: the accumulator's old value is not read
        d_words = np.stack([zero if no_c and r not in self._regs else self._read(r, line, stmt) for r in dregs],
                           axis=-1).astype(np.uint32)
        a = (np.stack([self._read(r, line, stmt) for r in aregs], axis=-1).astype(np.uint32) if reg_a
             else self._read(operands[1], line, stmt)[:, 0].astype(np.uint64))
        b = self._read(operands[2], line, stmt)[:, 0].astype(np.uint64)
        e = self._read(meta[0], line, stmt).astype(np.uint32) if sp else None
        try:
            ins, _, A, B, C = decode(ins.opcode, d_words, a, b, smem=self.smem, scale_d=sd,
                                     scale_a=imm.get("imm-scale-a", 1), scale_b=imm.get("imm-scale-b", 1),
                                     trans_a=imm.get("imm-trans-a", 0), trans_b=imm.get("imm-trans-b", 0), arch=self.arch,
                                     e=e, selector=sel)
        except (ValueError, TypeError, NotImplementedError) as exc:
            raise PTXError(str(exc), line=line, statement=stmt, token=op) from None
        out = pack_d(ins, compute(ins, A, B, C, self.arch))
        for i, r in enumerate(dregs):
            self._regs[r] = np.ascontiguousarray(out[..., i])
        reads = self._read_set(ins, a if not reg_a else None, b, imm)
        self._pending.append(_Op(line, stmt, tuple(dregs), tuple(aregs + meta), reads))

    def _read_set(self, ins, a_desc, b_desc, imm):
        from ..isa import smem as S

        addrs = []
        for desc, rows, role, tr in ((a_desc, ins.m, "a", imm.get("imm-trans-a", 0)),
                                     (b_desc, ins.n, "b", imm.get("imm-trans-b", 0))):
            if desc is None:
                continue
            bits = ins.elem(role).bits
            k = ins.matrix_shape(role)[1] if role == "a" else ins.k   # sparse A: the compressed K/2
            for d in np.unique(desc):
                ad, _ = S.operand_addresses(int(d), rows, k, bits, "MN" if tr else "K")
                addrs.append((ad[..., None] + np.arange(max(1, bits // 8))).ravel())
        return np.unique(np.concatenate(addrs)) if addrs else np.zeros(0, np.int64)


def example_program(instruction) -> str:
    """A complete PTX snippet (descriptors in %rd0/%rd1, accumulator zeroed; sparse: metadata in %e0) for
    ``instruction``."""
    from ..isa.parse import parse

    ins = parse(instruction)
    pre = "%f" if ins.dtype == "f32" else "%r"
    d = "{" + ", ".join(f"{pre}{i}" for i in range(ins.words("d"))) + "}"
    imms = (", 1, 1" if ins.imm_scale else "") + (", 0, 0" if ins.imm_trans else "")
    sp = ", %e0, 0" if ins.is_sparse else ""   # sparse: metadata in %e0, selector 0
    return "\n".join([
        "wgmma.fence.sync.aligned;",
        f"{ins.opcode} {d}, %rd0, %rd1{sp}, 0{imms};",
        "wgmma.commit_group.sync.aligned;",
        "wgmma.wait_group.sync.aligned 0;",
    ])
