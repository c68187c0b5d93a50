"""kiln.config: the Python-side settings, one typed object (C++ options: kiln.list_options()).

Attributes:
    numpy_default_float: dtype the tracer gives float results NumPy would make float64
        ("float64", NumPy's own default, or "float32").
    cache_dir: directory of the on-disk kernel cache; None means $KILN_CACHE_DIR, else
        ~/.cache/kiln.
    recompile_limit: recompiles of one function (new guards) before it runs eagerly for new
        argument kinds, with one warning (torch.compile's cache_size_limit).
    suppress_errors: when kiln itself fails while compiling (kiln.CompilerError: the C++
        compiler, or an internal error), warn and run the function eagerly for those argument
        kinds instead of raising. Never for errors NumPy itself would raise, nor with
        fullgraph=True.
    capture_loops: capture `for i in range(...)` loops and branches on traced values as
        structured control flow (one `loop` node compiled once for any trip count; branches as
        selects), from the function's source (kiln._loop_transform). False: tracing unrolls
        loops and a traced condition is a graph break, as before.
"""
import contextlib

_DEFAULTS = {
    "numpy_default_float": "float64",
    "cache_dir": None,
    "recompile_limit": 8,
    "suppress_errors": False,
    "capture_loops": True,
}


class Config:
    """Settings read at call time; assign attributes (`kiln.config.recompile_limit = 4`) or use
    `with kiln.config.patch(recompile_limit=4): ...`."""

    def __init__(self):
        object.__setattr__(self, "_values", dict(_DEFAULTS))

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"kiln.config has no setting {name!r} (settings: {', '.join(values)})")

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(
                f"kiln.config has no setting {name!r} (settings: {', '.join(self._values)})")
        if name == "numpy_default_float" and value not in ("float64", "float32"):
            raise ValueError("kiln.config.numpy_default_float must be 'float64' or 'float32'")
        if name == "recompile_limit" and (not isinstance(value, int) or value < 0):
            raise ValueError("kiln.config.recompile_limit must be an int >= 0")
        self._values[name] = value

    @contextlib.contextmanager
    def patch(self, **changes):
        """Temporarily changes settings (tests, one-off experiments)."""
        saved = dict(self._values)
        try:
            for name, value in changes.items():
                setattr(self, name, value)
            yield self
        finally:
            self._values.clear()
            self._values.update(saved)

    def reset(self):
        self._values.clear()
        self._values.update(_DEFAULTS)

    def __repr__(self):
        items = ", ".join(f"{name}={value!r}" for name, value in self._values.items())
        return f"kiln.config({items})"


config = Config()
