"""Attacks of a second round on kiln's torch front ends (test_attacks_second.py holds the NumPy
ones): calls that gave a crash or an unclear error."""
import numpy as np
import pytest

import kiln

torch = pytest.importorskip("torch")


def test_wrap_numpy_names_itself_for_a_tensor_numpy_cannot_view():
    # torch's own "Got unsupported ScalarType BFloat16" named neither kiln nor the argument
    wrapped = kiln.wrap_numpy(lambda x: np.tanh(x) * 2.0)
    with pytest.raises(TypeError, match=r"wrap_numpy.*torch\.bfloat16.*NumPy has no dtype"):
        wrapped(torch.ones(3, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match=r"wrap_numpy.*on the meta device"):
        wrapped(torch.empty(3, device="meta"))
    torch.testing.assert_close(wrapped(torch.ones(3, dtype=torch.bfloat16).float()),
                               torch.tanh(torch.ones(3)) * 2.0)
