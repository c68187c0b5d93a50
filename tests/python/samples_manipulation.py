"""Conformance samples for kiln/_numpy_manipulation.py: function -> f(rng) -> [(callable, arrays)]."""
import numpy as np

from conformance import one, reductions, sample_array  # noqa: F401

SAMPLES = {}
