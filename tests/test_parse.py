import pytest

import warpsim
from warpsim.isa import catalog as C

from fixtures import MALFORMED, REJECTED


@pytest.mark.parametrize("ins", C.CATALOG, ids=lambda i: i.opcode)
def test_accepts_every_catalog_opcode(ins):
    assert warpsim.parse(ins.opcode) is ins
    assert warpsim.parse("  " + ins.opcode + " ;") is ins


@pytest.mark.parametrize("bad", sorted(REJECTED))
def test_rejects_forbidden_combinations_naming_the_alternative(bad):
    with pytest.raises(ValueError) as exc:
        warpsim.parse(bad)
    msg = str(exc.value)
    assert REJECTED[bad][1] in msg
    assert "mma." in msg.split("Closest opcodes in the catalog:")[1]


@pytest.mark.parametrize("bad,words", MALFORMED)
def test_rejects_malformed_text(bad, words):
    with pytest.raises(ValueError, match=None) as exc:
        warpsim.parse(bad)
    assert words in str(exc.value)


def test_type_error_for_non_strings():
    with pytest.raises(TypeError, match="opcode string"):
        warpsim.parse(42)


def test_description_is_immutable():
    ins = warpsim.parse("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    with pytest.raises(Exception):
        ins.k = 3
    assert (ins.m, ins.n, ins.k) == (16, 8, 16)
    assert ins.registers("a") == 4 and ins.registers("c") == 4
    assert warpsim.parse("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64").registers("a") == 8
