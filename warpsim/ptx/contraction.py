"""ptxas' contraction of a product or quotient into the addition that consumes it.

``mul.f32`` is an FMUL; ``div.full.f32`` and ``div.approx.f32`` end in one (``MUFU.RCP(b) * a``, operands
scaled first where needed).  ptxas 13 (sm_90a, ``--fmad=true``: its default) merges that FMUL with an
``add.f32`` / ``sub.f32`` (no rounding modifier, the same ``.ftz``) that is the result's only reader in the
same basic block: one FFMA, rounded once.  Read off ``cuobjdump -sass`` of small PTX files (docs/sfu.md)
and checked on hardware words: 16 variants run on an H200 (tests/golden/ptx_contraction_sm90.npz: 0 of
16,384 words differ; without the merge 200 to 545 of 1,024 per merged variant), and the RMSNorm forward of
tests/golden/triton_driver_sfu_sm90.npz (``sum(x*x) / N + eps``) differs in 2 of 16 ``rstd`` words without it.

What ptxas does *not* merge (from the same SASS), so neither does this pass: a result with a second
reader, an ``add.rn.f32``, a ``.ftz`` producer into a non-``.ftz`` add, an add in another basic block;
nothing under ``--fmad=false`` (``load(..., fmad=False)``; the Triton driver passes the kernel's
``enable_fp_fusion``) or for a ``.target ..., debug`` module (ptxas -G).

:func:`contract` rewrites the laid-out program once, at load: the consumer becomes an internal statement
``contracted.<producer>.<add|sub|rsub>.f32 d, a, b, c`` (the rows in :mod:`warpsim.ptx.sfu_ops`), keeping
its source line and text for error messages; the producer itself still runs (its result has no reader).
"""

from __future__ import annotations

import re

#: producer opcode -> its .ftz; consumers must carry the same .ftz
PRODUCERS = {"mul.f32": False, "mul.ftz.f32": True, "div.full.f32": False, "div.full.ftz.f32": True,
             "div.approx.f32": False, "div.approx.ftz.f32": True}
#: consumer opcode -> .ftz
CONSUMERS = {"add.f32": False, "sub.f32": False, "add.ftz.f32": True, "sub.ftz.f32": True}
#: opcodes after which a basic block ends
_ENDS_BLOCK = re.compile(r"(?:bra|call|ret|exit|brx)\b")


def _operands_flat(st):
    for op in st.operands:
        if isinstance(op, list):
            yield from op
        else:
            yield op


def _reads(text_ops, name):
    rx = re.compile(r"(?<![\w$%])" + re.escape(name) + r"(?![\w$])")
    return sum(len(rx.findall(op)) for op in text_ops if isinstance(op, str))


def _writes(st, names):
    """True when ``st``'s first operand (its destination, for every ALU / load / move form) is one of ``names``."""
    if not st.operands:
        return False
    dst = st.operands[0]
    dsts = dst if isinstance(dst, list) else [dst]
    return any(isinstance(d, str) and d.strip() in names for d in dsts)


def contract(code, functions):
    """Rewrite, in ``code`` (a laid-out statement list), every add / sub that ptxas merges with the division
    feeding it.  ``functions``: the program's functions (``start``, ``end``, ``labels``, ``scoped_labels``)."""
    for fn in functions:
        starts = set(fn.labels.values()) | set(fn.scoped_labels.values())
        occurrences: dict = {}
        for pc in range(fn.start, fn.end):
            for tok in re.findall(r"%[\w$]+", " ".join(o for o in _operands_flat(code[pc]) if isinstance(o, str))):
                occurrences[tok] = occurrences.get(tok, 0) + 1
        for pc in range(fn.start, fn.end):
            st = code[pc]
            if st.opcode not in PRODUCERS or st.guard is not None or len(st.operands) != 3:
                continue
            if not all(isinstance(o, str) for o in st.operands):
                continue
            q, a, b = (o.strip() for o in st.operands)
            if occurrences.get(q) != 2:                       # its definition and one reader
                continue
            for j in range(pc + 1, fn.end):
                nxt = code[j]
                if j in starts or _ENDS_BLOCK.match(code[j - 1].opcode):
                    break
                if _reads(list(_operands_flat(nxt)), q):
                    _merge(nxt, st, q, a, b)
                    break
                if _writes(nxt, {a, b}):                     # the merged FFMA would read other operands
                    break


def _merge(consumer, producer, q, a, b):
    """Turn ``consumer`` into the merged statement when it is an add / sub of the producer's .ftz."""
    if (consumer.opcode not in CONSUMERS or consumer.guard is not None
            or CONSUMERS[consumer.opcode] != PRODUCERS[producer.opcode] or len(consumer.operands) != 3
            or not all(isinstance(o, str) for o in consumer.operands)):
        return
    d, x, y = (o.strip() for o in consumer.operands)
    if x == q and y != q:
        op, c = ("add" if consumer.opcode.startswith("add") else "sub"), y
    elif y == q and x != q:
        op, c = ("add" if consumer.opcode.startswith("add") else "rsub"), x
    else:
        return
    consumer.opcode = f"contracted.{producer.opcode}.{op}.f32"
    consumer.operands = [d, a, b, c]
    consumer.handler = consumer.match = None
