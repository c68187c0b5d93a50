"""Conformance samples for kiln/_numpy_statistics.py: function -> f(rng) -> [(callable, arrays)]."""
import numpy as np

from conformance import one, reductions, sample_array  # noqa: F401

SAMPLES = {}
