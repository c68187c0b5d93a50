"""Shapes, axes and counts NumPy takes only as integers (operator.index): a float, a NumPy float
scalar or a float inside a shape tuple is NumPy's TypeError, never truncated by int() into a
result NumPy would not give (np.full(2.5, 1) made 2 elements, x.sum(axis=0.0) summed)."""
import numpy as np
import pytest

import kiln

CASES = {
    "zeros": lambda x: np.zeros(3.0) + x,
    "ones_tuple": lambda x: np.ones((2.0, 3)) + x,
    "full_truncated": lambda x: np.full(2.5, 1.0) + x[0],
    "empty_numpy_float": lambda x: np.empty(np.float64(3)) * 0 + x,
    "full_numpy_float32_entry": lambda x: np.full((np.float32(2),), 1.0) + x[0],
    "zeros_like_shape": lambda x: np.zeros_like(x, shape=3.0),
    "reshape": lambda x: x.reshape(3.0),
    "reshape_tuple": lambda x: x.reshape((3.0,)),
    "broadcast_to": lambda x: np.broadcast_to(x, (2.0, 3)),
    "eye": lambda x: np.eye(3.0) + x,
    "identity": lambda x: np.identity(3.0) + x,
    "linspace_num": lambda x: np.linspace(0, 1, 3.0) + x,
    "sum_axis": lambda x: x.sum(axis=0.0),
    "cumsum_axis": lambda x: np.cumsum(x, axis=0.0),
    "concatenate_axis": lambda x: np.concatenate([x, x], axis=0.0),
    "stack_axis": lambda x: np.stack([x, x], axis=0.0),
    "squeeze_axis": lambda x: np.squeeze(x[None], axis=0.0),
    "expand_dims_axis": lambda x: np.expand_dims(x, 0.0),
    "swapaxes": lambda x: np.swapaxes(x[None], 0.0, 1),
    "transpose_axes": lambda x: np.transpose(x[None], (1.0, 0)),
    "moveaxis": lambda x: np.moveaxis(x[None], 0.0, 1),
    "diff_axis": lambda x: np.diff(x, axis=0.0),
    "ufunc_accumulate_axis": lambda x: np.add.accumulate(x, axis=0.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_float_where_numpy_takes_an_integer_is_numpys_type_error(name):
    function = CASES[name]
    with pytest.raises(TypeError):
        function(np.ones(3))                  # NumPy's answer, so the case stays honest
    with pytest.raises(TypeError, match="test_trust_integer_arguments.py:|integer"):
        kiln.compile(function)(np.ones(3))


def test_integers_of_every_kind_still_work():
    def shapes(x):
        return (np.zeros((np.int32(2), np.uint8(3))) + x, x.sum(axis=np.int64(0)),
                np.ones(np.intp(3)) + x[0], np.linspace(0, 1, np.int16(4)))
    for mine, theirs in zip(kiln.compile(shapes)(np.ones(3)), shapes(np.ones(3))):
        np.testing.assert_array_equal(mine, theirs)
