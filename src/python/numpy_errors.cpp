#include "python/numpy_errors.h"

#include "python/common.h"

namespace kiln::python {
namespace {

struct ErrorState {
  nb::object context_variable;  // NumPy 2: numpy._core.umath._extobj_contextvar
  nb::object geterr;            // NumPy 2: numpy.geterr
  nb::object geterrobj;         // NumPy 1: numpy.core.umath.geterrobj
  nb::object quiet;             // NumPy 2: the last state value found to ask for no checks
  bool quiet_warns = false;     // whether that state warns on some condition
  // Python's warnings filters, as last read: (the list, its size, its first entry) and whether
  // they make a RuntimeWarning an error. catch_warnings installs a new list; simplefilter and
  // filterwarnings insert at the front (or leave the set of entries as it was).
  nb::dict warnings_namespace;
  nb::object filters_name;  // "filters", interned: its hash is kept
  uint64_t namespace_version = 0;  // Python 3.11: the namespace's dict version at that read
  nb::object filters, first_filter;
  Py_ssize_t filter_count = -1;
  bool filters_raise = false;
};

ErrorState& error_state() {
  static ErrorState* slot = nullptr;
  ErrorState* state = made_once(slot, [] {
    auto* made = new ErrorState();  // never destroyed: outlives interpreter exit
    made->warnings_namespace =
        nb::borrow<nb::dict>(PyModule_GetDict(nb::module_::import_("warnings").ptr()));
    made->filters_name = nb::steal(PyUnicode_InternFromString("filters"));
    nb::module_ numpy = nb::module_::import_("numpy");
    if (nb::hasattr(numpy, "_core")) {
      nb::module_ umath = nb::module_::import_("numpy._core.umath");
      if (nb::hasattr(umath, "_extobj_contextvar")) {
        made->context_variable = umath.attr("_extobj_contextvar");
        made->geterr = numpy.attr("geterr");
        return made;
      }
    }
    made->geterrobj = nb::module_::import_("numpy.core.umath").attr("geterrobj");
    return made;
  });
  return *state;
}

bool checks(nb::handle mode) {
  for (const char* name : {"raise", "call", "log"})
    if (nb::str(name).equal(mode)) return true;
  return false;
}

// warnings.filters, on a compiled call's fast path. Python 3.11 versions each dict (PEP 509):
// while the warnings module's namespace is unchanged (catch_warnings rebinds `filters`), so is
// the list found last. Later Pythons dropped the version: a lookup each call.
PyObject* current_filters(ErrorState& state) {
#if PY_VERSION_HEX < 0x030C0000
  const uint64_t version =
      reinterpret_cast<PyDictObject*>(state.warnings_namespace.ptr())->ma_version_tag;
  if (version == state.namespace_version && state.filters.is_valid()) return state.filters.ptr();
  state.namespace_version = version;
#endif
  return PyDict_GetItem(state.warnings_namespace.ptr(), state.filters_name.ptr());
}

// Whether a warnings filter turns RuntimeWarning into an error (`-W error`, pytest's
// filterwarnings = error, warnings.simplefilter("error")): NumPy's "warn" then raises.
// Conservative: any "error" entry for RuntimeWarning or a base of it, whatever its message,
// module or place in the list (the call then runs as NumPy, which decides).
bool filters_raise_runtime_warnings(ErrorState& state) {
  PyObject* filters = current_filters(state);
  if (filters == nullptr || !PyList_Check(filters)) return false;
  const Py_ssize_t count = PyList_GET_SIZE(filters);
  PyObject* first = count > 0 ? PyList_GET_ITEM(filters, 0) : nullptr;
  if (filters == state.filters.ptr() && count == state.filter_count &&
      first == state.first_filter.ptr())
    return state.filters_raise;
  bool raise = false;
  for (Py_ssize_t i = 0; i < count && !raise; ++i) {
    PyObject* entry = PyList_GET_ITEM(filters, i);
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) < 3) continue;
    PyObject* action = PyTuple_GET_ITEM(entry, 0);
    PyObject* category = PyTuple_GET_ITEM(entry, 2);
    raise = PyUnicode_Check(action) && PyUnicode_CompareWithASCIIString(action, "error") == 0 &&
            PyType_Check(category) &&
            PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(PyExc_RuntimeWarning),
                             reinterpret_cast<PyTypeObject*>(category));
  }
  // Strong references: a freed list or entry at the same address must not look unchanged.
  state.filters = nb::borrow(filters);
  state.first_filter = first ? nb::borrow(first) : nb::object();
  state.filter_count = count;
  state.filters_raise = raise;
  return raise;
}

}  // namespace

bool numpy_checks_errors() {
  ErrorState& state = error_state();
  if (state.context_variable.is_valid()) {
    PyObject* value = nullptr;
    if (PyContextVar_Get(state.context_variable.ptr(), nullptr, &value) < 0)
      throw nb::python_error();
    nb::object current = nb::steal(value);
    if (!current.is(state.quiet)) {
      nb::dict modes = nb::cast<nb::dict>(state.geterr());
      bool warns = false;
      for (auto [condition, mode] : modes) {
        if (checks(mode)) return true;
        warns = warns || nb::str("warn").equal(mode);
      }
      state.quiet = std::move(current);
      state.quiet_warns = warns;
    }
    return state.quiet_warns && filters_raise_runtime_warnings(state);
  }
  // NumPy 1: [buffer size, mask, handler], the mask 3 bits per condition (divide, over, under,
  // invalid) holding UFUNC_ERR_IGNORE 0, WARN 1, RAISE 2, CALL 3, PRINT 4, LOG 5.
  nb::object errobj = state.geterrobj();
  long mask = nb::cast<long>(nb::borrow<nb::list>(errobj)[1]);
  bool warns = false;
  for (int shift = 0; shift <= 9; shift += 3) {
    long mode = (mask >> shift) & 7;
    if (mode == 2 || mode == 3 || mode == 5) return true;
    warns = warns || mode == 1;
  }
  return warns && filters_raise_runtime_warnings(state);
}

}  // namespace kiln::python
