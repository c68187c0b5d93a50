"""Conformance samples for kiln/_numpy_math.py: function -> f(rng) -> [(callable, arrays)]."""
import numpy as np

from conformance import one, sample_array  # noqa: F401

SAMPLES = {}
