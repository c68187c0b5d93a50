"""Linear-algebra sweeps as users write them (the control-flow issue's evidence: LU,
Gram-Schmidt, covariance), from kiln.bench.workloads: each loop is captured whole
(fullgraph=True: no graph break, which also holds for code that ships inside the kiln package),
compiled once, and agrees with NumPy."""
import numpy as np
import pytest

import kiln
from kiln.bench.workloads import covariance, gram_schmidt, lu

rng = np.random.default_rng(11)
SQUARE = rng.random((60, 60)) + 60 * np.eye(60)
TALL = rng.standard_normal((120, 60))


@pytest.mark.parametrize("function, argument", [
    (lu, SQUARE), (gram_schmidt, SQUARE), (covariance, TALL),
], ids=["lu", "gram_schmidt", "covariance"])
def test_sweeps_with_moving_slices_compile_whole_and_agree_with_numpy(function, argument):
    compiled = kiln.compile(function, fullgraph=True)
    report = kiln.explain(compiled)(argument.copy())
    assert [loop.kind for loop in report.loops] == ["loop"], report.loops
    expected = function(argument.copy())
    got = compiled(argument.copy())
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
