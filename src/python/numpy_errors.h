// NumPy's floating-point error state (np.errstate, np.seterr). kiln's kernels compute IEEE
// values without checking for errors, so a call made while NumPy would raise
// FloatingPointError (or call a handler, or log) on one runs as eager NumPy, which checks; so
// does one made while NumPy warns and Python's warnings filters make that warning an error.
#pragma once

namespace kiln::python {

// Whether NumPy's current error state asks for "raise", "call" or "log" on any condition, or
// "warn" while a warnings filter turns RuntimeWarning into an error. Cheap on a compiled call's
// fast path: NumPy 2 keeps the state in a context variable whose value is a new object at each
// change, and the last value found to ask for none is kept; the filters list is rescanned only
// when it, its size or its first entry changed.
bool numpy_checks_errors();

}  // namespace kiln::python
