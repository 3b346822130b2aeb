import numpy as np
import pytest
from fractions import Fraction

from warpsim.api.explain import round_nearest, ulp
from warpsim.isa.types import TYPES


@pytest.mark.parametrize("name,np_type", [("f16", np.float16), ("f32", np.float32)])
def test_round_nearest_agrees_with_numpy_casts(name, np_type):
    rng = np.random.default_rng(0)
    t = TYPES[name]
    fi = np.finfo(np_type)
    xs = rng.standard_normal(2000) * np.exp2(rng.integers(-30, 20, 2000)).astype(np.float64)
    xs = np.concatenate([xs, [float(fi.tiny) * 0.75, float(fi.smallest_subnormal) * 0.5, float(fi.max) * 1.0001, 0.0]])
    for x in xs:
        with np.errstate(over="ignore"):
            want = float(np_type(x))
        assert round_nearest(Fraction(float(x)), t) == want, x


def test_ulp_of_one_and_of_subnormals():
    assert ulp(Fraction(1), TYPES["f32"]) == Fraction(1, 2**23)
    assert ulp(Fraction(1), TYPES["f16"]) == Fraction(1, 2**10)
    assert ulp(Fraction(1, 2**30), TYPES["f16"]) == Fraction(1, 2**24)
    assert ulp(Fraction(3, 2), TYPES["f32"]) == Fraction(1, 2**23)
