"""pytest plugin: every test runs inside kiln.device("cuda"), so kiln.compile without a device
compiles for the GPU (`scripts/gpu-check run` runs NumPy test files this way: `-p on_cuda` with
tests/gpu on the path)."""
import pytest

import kiln


@pytest.fixture(autouse=True)
def _kiln_on_cuda():
    with kiln.device("cuda"):
        yield
