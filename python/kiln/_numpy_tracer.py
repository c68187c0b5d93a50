"""The NumPy tracer, assembled: the tracer (_tracer), NumPy's function and ufunc tables
(_numpy_api and the _numpy_* families), indexing (_indexing) and the ndarray methods and
operators (_tracer_operators). The driver (kiln._compile) imports only this module; the modules
below import each other in one direction (_graph_breaks <- _tracer <- the tables), so the
package has no import cycle and no imports inside functions.

The driver's interface: wrap, unwrap, is_scalar_result, as_output (see _tracer's doc), and
attach_driver(trace, driver) -> a context manager to trace inside.
"""
from . import _indexing, _numpy_api, _numpy_creation, _tracer, _tracer_operators  # noqa: F401
from ._tracer import as_output, is_scalar_result, unwrap, wrap  # noqa: F401

_tracer.install(_numpy_api, _indexing)


def attach_driver(trace, driver):
    """Tracing `trace` for `driver` (graph breaks, data inputs reach it through the trace
    context); returns the context manager under which the user's function runs: NumPy's
    creation functions then build nodes in this trace."""
    context = _tracer.context_for(trace)
    context.driver = driver
    return _numpy_creation.capturing(context)
