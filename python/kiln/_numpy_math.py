"""Tracer implementations of NumPy's numeric helper functions (isclose, nan_to_num, cov,
cross, trapezoid, polyval, convolve, digitize, interp, histogram, ...). Each takes the
TraceContext first, then NumPy's arguments, and is built from the tracer's own operations;
arguments that decide shapes must be concrete (a traced one is a graph break)."""
import numpy as np

FUNCTIONS = {}
