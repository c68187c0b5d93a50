"""Tracer implementations of NumPy's selection and layout functions (take, take_along_axis,
choose, select, split, stacking, insert/delete, meshgrid, ...). Each takes the TraceContext
first, then NumPy's arguments, and is built from the tracer's own operations; arguments that
decide shapes must be concrete (a traced one is a graph break)."""
import numpy as np

FUNCTIONS = {}
