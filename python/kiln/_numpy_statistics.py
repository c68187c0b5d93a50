"""Tracer implementations of NumPy's nan-reductions, average, diff, round, trace and diagonal. Each takes the TraceContext
first, then NumPy's arguments."""

FUNCTIONS = {}
