"""kiln.wrap_numpy's environment holds the NumPy and math functions the code names (np.sin,
np.concatenate, math.exp), read at each call so that one replaced after the first call is seen
(kiln._environment, test_trust_library_patches.py). Its fast paths for repeated calls on GPU
arrays (JaxCall, TorchCall: kiln._library_calls) compare the environment by identity and are
taken only where every value is immutable: a ufunc or NumPy 2's array-function dispatcher was
not, so every call of a function naming np.sin took the general path (on the H200:
test_cuda.py::test_wrap_numpy_calls_on_jax_arrays_again_take_the_fast_path failed)."""
import math

import numpy as np
import pytest

from kiln._static_keys import immutable, static_key


@pytest.mark.parametrize("function", [np.sin, np.add, np.concatenate, np.linalg.norm, np.sum,
                                      math.exp], ids=lambda f: f.__name__)
def test_numpys_functions_are_keyed_by_identity(function):
    assert immutable(function)
    assert static_key(function) is function
