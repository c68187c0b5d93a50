"""Launches of one kernel that run as one (codegen/cuda/combined_launches.cpp): parts that store
into one buffer combine where their elements are apart and neither reads what the other
writes. Without a GPU (CI) the CUDA source kiln would compile is checked; on a GPU
(scripts/gpu-check) the programs also run there against NumPy."""
import numpy as np

import kiln
from kiln.bench import workloads

GPU = not kiln._kiln.cuda_unavailable_reason()


def loop_kernel(source):
    """The text of the kernel a graph loop's body runs (after the copy of the initial value)."""
    functions = source.split('extern "C" __global__')
    assert len(functions) >= 3, source[-3000:]
    return functions[2]


def test_an_in_place_update_and_its_edges_are_one_launch(cuda_sources):
    """The heat equation's step on a million points (too many for a device loop) updates
    u[1:-1] in place: the body writes the interior into the other buffer of the loop's pair and
    copies the two edges there, three stores into one buffer at elements apart: one launch per
    step (H100: 600 launches were 2.9 ms, Inductor 1.5)."""
    x = np.random.default_rng(0).uniform(0, 1, 1_000_000)
    compiled = kiln.compile(workloads.heat_loop, device="cuda" if GPU else "cpu")
    np.testing.assert_allclose(compiled(x), workloads.heat_loop(x), rtol=1e-12)
    body = loop_kernel(cuda_sources[-1])
    assert body.count("kiln_grid = ") == 3, body
    assert 'extern "C"' not in cuda_sources[-1].split(body)[1], "the body is one kernel"


def edge_from_the_interior(x):
    u = x.copy()
    for _ in range(5):
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u[0] = u[1]  # reads the interior the update wrote: after it, not beside it
    return u


def test_a_store_reading_what_another_wrote_keeps_its_own_launch(cuda_sources):
    x = np.random.default_rng(1).uniform(0, 1, 1_000_000)
    compiled = kiln.compile(edge_from_the_interior, device="cuda" if GPU else "cpu")
    np.testing.assert_allclose(compiled(x), edge_from_the_interior(x), rtol=1e-12)
    source = cuda_sources[-1]
    assert source.count('extern "C" __global__') > 2, source[-3000:]
