"""Standalone PTX for asking ptxas whether a target has an opcode (no nvcc, no GPU).

:func:`ptx_module` writes one ``.entry`` per instruction: load the operand registers from
global memory, execute the opcode, store D.  ``warpsim/hw/offline/ptxas_archs.py`` assembles one such
module per (opcode, target) to build ``tests/golden/ptxas_archs.json.xz``; the tests assemble one
module per target to check the catalog's per-architecture derivation against a live ptxas.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

#: understood by ptxas 12.9 and 13.0; every catalog opcode's PTX ISA version is at most this
PTX_VERSION = "8.8"
#: targets that need a newer PTX ISA (ptxas 13.0: sm_110 / sm_110a exist from PTX ISA 9.0)
PTX_VERSION_FOR = {"sm_110": "9.0", "sm_110a": "9.0"}


def ptx_version(target: str) -> str:
    """The ``.version`` a probe file for ``target`` declares."""
    return PTX_VERSION_FOR.get(target, PTX_VERSION)


def _entry(ins, name: str, selector: int = 0) -> list[str]:
    regs, groups = {}, []
    for role in "dabc":
        wide = ins.elem(role).bits == 64
        names = [f"%{role}{'d' if wide else 'r'}{i}" for i in range(ins.registers(role))]
        groups.append("{" + ", ".join(names) + "}")
        for nm in names:
            regs[nm] = (role, ".f64" if wide else ".b32")
    body = [f"  .reg {t} {nm};" for nm, (_, t) in regs.items()]
    body += ["  .reg .b32 %e;", "  .reg .u64 %p;", "  ld.param.u64 %p, [P];"]
    off = 0
    for nm, (role, t) in regs.items():
        if role != "d":
            body.append(f"  ld.global{t} {nm}, [%p+{off}];")
            off += 8
    body.append(f"  ld.global.b32 %e, [%p+{off}];")
    tail = f", %e, {selector}" if ins.is_sparse else ""
    if ins.block_scaled:   # scale-a-data, {byte-id-a, thread-id-a}, scale-b-data, {byte-id-b, thread-id-b}
        tail += ", %e, {0, 0}, %e, {0, 0}"
    body.append(f"  {ins.opcode} {', '.join(groups)}{tail};")
    for nm, (role, t) in regs.items():
        if role == "d":
            off += 8
            body.append(f"  st.global{t} [%p+{off}], {nm};")
    return [f".visible .entry {name}(.param .u64 P)", "{", *body, "  ret;", "}", ""]


#: the newest PTX ISA an older ptxas reads (Triton 3.6 bundles ptxas 12.8)
PTX_VERSION_OF_PTXAS = {"12.8": "8.7"}


def ptx_module(instructions, target: str, ptxas_release: str | None = None) -> str:
    """PTX text with kernel ``k<i>`` executing ``instructions[i]`` (a catalog Instruction), declaring the
    ``.version`` the target needs, or the newest one ``ptxas_release`` reads (every catalog opcode needs
    at most PTX ISA 8.7)."""
    version = PTX_VERSION_OF_PTXAS.get(ptxas_release) or ptx_version(target)
    out = [f".version {version}", f".target {target}", ".address_size 64", ""]
    for i, ins in enumerate(instructions):
        out += _entry(ins, f"k{i}")
    return "\n".join(out)


def assemble(ptxas: str, text: str, target: str, workdir: str | None = None, name: str = "probe"):
    """Run ptxas on PTX text; returns (returncode, error lines, cubin path or None)."""
    workdir = workdir or tempfile.mkdtemp(prefix="warpsim_ptx_")
    src, cubin = os.path.join(workdir, name + ".ptx"), os.path.join(workdir, name + ".cubin")
    with open(src, "w") as f:
        f.write(text)
    r = subprocess.run([ptxas, f"-arch={target}", "-o", cubin, src], capture_output=True, text=True)
    errs = [ln for ln in r.stderr.splitlines() if re.search(r"\berror\b", ln)]
    return r.returncode, errs, cubin if r.returncode == 0 else None


def error_reason(line: str) -> str:
    """ptxas's message without the file and line prefix."""
    return re.sub(r"^.*?error\s*:\s*", "", line).strip()


def error_line_numbers(errs) -> set[int]:
    return {int(m.group(1)) for e in errs for m in [re.search(r", line (\d+);", e)] if m}
