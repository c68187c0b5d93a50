#include "python/numpy_errors.h"

#include "python/common.h"

namespace kiln::python {
namespace {

struct ErrorState {
  nb::object context_variable;  // NumPy 2: numpy._core.umath._extobj_contextvar
  nb::object geterr;            // NumPy 2: numpy.geterr
  nb::object geterrobj;         // NumPy 1: numpy.core.umath.geterrobj
  nb::object quiet;             // NumPy 2: the last state value found to ask for no checks
};

ErrorState& error_state() {
  static ErrorState* state = [] {
    auto* made = new ErrorState();  // never destroyed: outlives interpreter exit
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
  }();
  return *state;
}

bool checks(nb::handle mode) {
  for (const char* name : {"raise", "call", "log"})
    if (nb::str(name).equal(mode)) return true;
  return false;
}

}  // namespace

bool numpy_checks_errors() {
  ErrorState& state = error_state();
  if (state.context_variable.is_valid()) {
    PyObject* value = nullptr;
    if (PyContextVar_Get(state.context_variable.ptr(), nullptr, &value) < 0)
      throw nb::python_error();
    nb::object current = nb::steal(value);
    if (current.is(state.quiet)) return false;
    nb::dict modes = nb::cast<nb::dict>(state.geterr());
    for (auto [condition, mode] : modes)
      if (checks(mode)) return true;
    state.quiet = std::move(current);
    return false;
  }
  // NumPy 1: [buffer size, mask, handler], the mask 3 bits per condition (divide, over, under,
  // invalid) holding UFUNC_ERR_IGNORE 0, WARN 1, RAISE 2, CALL 3, PRINT 4, LOG 5.
  nb::object errobj = state.geterrobj();
  long mask = nb::cast<long>(nb::borrow<nb::list>(errobj)[1]);
  for (int shift = 0; shift <= 9; shift += 3) {
    long mode = (mask >> shift) & 7;
    if (mode == 2 || mode == 3 || mode == 5) return true;
  }
  return false;
}

}  // namespace kiln::python
