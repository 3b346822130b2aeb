"""Device ``printf`` (``call vprintf, (format, args)``): the C format applied to the argument buffer, as the CUDA
runtime prints it when the launch ends.

The argument buffer holds each value at its natural alignment: ``%d %i %u %x %X %o %c`` take 4 bytes (8 with
``l`` / ``ll`` / ``z`` / ``j`` / ``t``), floating conversions an 8-byte double (C promotes float), ``%s`` and
``%p`` an 8-byte address.
"""

from __future__ import annotations

import re
import struct

_SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?(?P<len>hh|h|ll|l|j|z|t|L)?"
                   r"(?P<conv>[diouxXeEfFgGaAcspn%])")


def format_vprintf(fmt: str, read, base: int) -> str:
    """``fmt`` with its conversions filled from the argument buffer at ``base``; ``read(address, nbytes)`` reads
    the caller's memory (the buffer, and the strings ``%s`` points to)."""
    out, pos, off = [], 0, 0

    def take(n):
        nonlocal off
        off = (off + n - 1) // n * n
        raw = read(base + off, n)
        off += n
        return raw

    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        conv, length = m.group("conv"), m.group("len") or ""
        if conv == "%":
            out.append("%")
            continue
        if "*" in (m.group("width") or "", m.group("prec") or ""):
            raise ValueError(f"printf format {fmt!r}: '*' widths are not modelled")
        spec = "%" + m.group("flags") + (m.group("width") or "") + (f".{m.group('prec')}" if m.group("prec") else "")
        if conv in "diouxXc":
            n = 8 if length in ("l", "ll", "j", "z", "t") else 4
            v = int.from_bytes(take(n), "little", signed=conv in "di")
            if length == "h":
                v = (v & 0xFFFF) - (0x10000 if conv in "di" and v & 0x8000 else 0)
            elif length == "hh":
                v = (v & 0xFF) - (0x100 if conv in "di" and v & 0x80 else 0)
            out.append(chr(v & 0xFF) if conv == "c" else (spec + conv.replace("i", "d")) % v)
        elif conv in "eEfFgGaA":
            v = struct.unpack("<d", take(8))[0]
            if conv in "aA":
                out.append(float.hex(v) if conv == "a" else float.hex(v).upper())
            else:
                out.append(_c_float(spec, conv, v))
        elif conv == "s":
            addr = int.from_bytes(take(8), "little")
            s = bytearray()
            while len(s) < 4096:
                c = read(addr + len(s), 1)
                if c == b"\0":
                    break
                s += c
            out.append((spec + "s") % s.decode(errors="replace"))
        elif conv == "p":
            out.append("0x%x" % int.from_bytes(take(8), "little"))
        else:
            raise ValueError(f"printf format {fmt!r}: %{conv} is not modelled")
    out.append(fmt[pos:])
    return "".join(out)


def _c_float(spec, conv, v):
    """C's spelling of inf and nan (glibc: inf, -inf, nan, -nan)."""
    if v != v or v in (float("inf"), float("-inf")):
        neg = (struct.pack("<d", v)[7] & 0x80) != 0
        word = "nan" if v != v else "inf"
        word = word.upper() if conv.isupper() else word
        text = ("-" if neg else ("+" if "+" in spec else "")) + word
        width = re.search(r"\d+$", spec.split(".")[0])
        return text.rjust(int(width.group())) if width and "-" not in spec else text
    return (spec + conv) % v
