"""The instruction-set description: element types, the one catalog, the opcode parser,
register fragment layouts and sparse metadata.  Everything here is data derived from
:mod:`warpsim.isa.catalog`; nothing here computes arithmetic."""
