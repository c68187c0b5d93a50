"""Tracer implementations of NumPy's tile, repeat, roll and pad. Each takes the TraceContext
first, then NumPy's arguments."""

FUNCTIONS = {}
