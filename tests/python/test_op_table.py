"""The op table is the only list of ops: the Python bindings and the NumPy front end's ufunc
table are generated from it (kiln._kiln.op_table())."""
import numpy as np

from kiln import _kiln, _numpy_api


def test_every_elementwise_op_has_a_binding_and_reaches_numpy():
    rows = _kiln.op_table()
    names = [row[0] for row in rows]
    assert len(names) == len(set(names)) and "add" in names and "matmul" in names
    for name, public, kind, promotion, cost, domain in rows:
        if kind not in ("unary", "binary"):
            continue
        assert callable(getattr(_kiln, public)), public
        assert promotion in ("keep", "math_float", "float64", "bool_to_float")
        assert cost in ("cheap", "costly", "call") and domain
        ufunc = getattr(np, public, None)
        if isinstance(ufunc, np.ufunc):
            assert ufunc in _numpy_api.UFUNCS, public
