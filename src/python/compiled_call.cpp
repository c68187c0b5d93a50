// CompiledCall: what kiln.compile returns. A C++ callable, so a call that hits the in-process
// cache goes from the interpreter straight into GuardedCache::call with the caller's argument
// tuple: no Python frame of kiln's runs (a Python wrapper cost about a quarter of a 0-d call).
// Only misses, eager entries and retraced entries call back into the Python driver. It binds as
// a method (`__get__`, like a function), and has a __dict__ so functools.update_wrapper can
// give it the wrapped function's name, docstring and __wrapped__.
#include "api/logging.h"
#include "python/common.h"
#include "python/numpy_errors.h"

namespace kiln::python {
namespace {

struct CompiledCall {
  nb::object cache;    // the GuardedCache
  nb::object fn;       // the user's function: eager entries call it
  nb::object slow;     // driver(args, kwargs): a miss (trace, compile, call)
  nb::object retrace;  // driver(args, kwargs): an entry traced again on every call
  // The function has exception handlers (try, with): an error a runtime check raises when the
  // graph runs (an index out of bounds, a singular matrix) would escape its `except` clause,
  // so such a call runs eagerly instead, where the handler sees NumPy's error. So does a
  // function that writes its arguments (the driver sets it when it adds such an entry): the
  // check raises before any write-back, and NumPy had made the writes before the failing op.
  bool eager_on_check_error = false;
};

// The errors of runtime checks (api/runtime_checks.h), raised before any result or write-back.
bool is_check_error(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Index:
    case ErrorKind::Value:
    case ErrorKind::Overflow:
    case ErrorKind::Runtime:
    case ErrorKind::IndexOrRuntime:
    case ErrorKind::ZeroDivision:
    case ErrorKind::LinAlg: return true;
    default: return false;
  }
}

CompiledCall& self_of(PyObject* self) { return *nb::inst_ptr<CompiledCall>(self); }

PyObject* call_compiled(PyObject* self, PyObject* args, PyObject* kwargs) {
  CompiledCall& compiled = self_of(self);
  try {
    if (numpy_checks_errors()) {
      if (api::log_enabled(api::LogChannel::GraphBreaks))
        api::log(api::LogChannel::GraphBreaks,
                 "NumPy's error state (np.errstate / np.seterr, or a warnings filter of "
                 "'error') raises, calls or logs on floating-point errors: " +
                     std::string(nb::repr(compiled.fn).c_str()) +
                     " runs eagerly");
      return PyObject_Call(compiled.fn.ptr(), args, kwargs);
    }
    nb::object result = guarded_call(compiled.cache, args, kwargs);
    const ModuleState& module = state();
    if (result.is(module.miss) || result.is(module.retrace)) {
      PyObject* driver = result.is(module.miss) ? compiled.slow.ptr() : compiled.retrace.ptr();
      nb::object keywords = kwargs ? nb::borrow(kwargs) : nb::steal(PyDict_New());
      return PyObject_CallFunctionObjArgs(driver, args, keywords.ptr(), nullptr);
    }
    if (result.is(module.eager)) return PyObject_Call(compiled.fn.ptr(), args, kwargs);
    return result.release().ptr();
  } catch (nb::python_error& error) {
    error.restore();
  } catch (const Error& error) {
    if (compiled.eager_on_check_error && is_check_error(error.kind())) {
      // A silent rerun would hide a cost as large as NumPy's own run: say why it happens.
      if (api::log_enabled(api::LogChannel::GraphBreaks))
        api::log(api::LogChannel::GraphBreaks, std::string(nb::repr(compiled.fn).c_str()) +
                                                   " runs again eagerly: " + error.what());
      return PyObject_Call(compiled.fn.ptr(), args, kwargs);
    }
    translate_kiln_error(error);
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
  return nullptr;
}

// As a class attribute it binds like a function: instance.method(...) passes the instance.
PyObject* bind_compiled(PyObject* self, PyObject* instance, PyObject*) {
  if (instance == nullptr || instance == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, instance);
}

PyObject* repr_compiled(PyObject* self) {
  if (!nb::inst_ready(self)) return PyUnicode_FromString("<kiln compiled function>");
  return PyUnicode_FromFormat("<kiln compiled %R>", self_of(self).fn.ptr());
}

int traverse_compiled(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  PyObject** dict = _PyObject_GetDictPtr(self);
  if (dict != nullptr) Py_VISIT(*dict);
  if (!nb::inst_ready(self)) return 0;
  CompiledCall& compiled = self_of(self);
  for (nb::object* member : {&compiled.cache, &compiled.fn, &compiled.slow, &compiled.retrace})
    Py_VISIT(member->ptr());
  return 0;
}

int clear_compiled(PyObject* self) {
  PyObject** dict = _PyObject_GetDictPtr(self);
  if (dict != nullptr) Py_CLEAR(*dict);
  if (!nb::inst_ready(self)) return 0;
  CompiledCall& compiled = self_of(self);
  for (nb::object* member : {&compiled.cache, &compiled.fn, &compiled.slow, &compiled.retrace})
    *member = nb::object();
  return 0;
}

PyType_Slot compiled_slots[] = {{Py_tp_call, reinterpret_cast<void*>(call_compiled)},
                                {Py_tp_descr_get, reinterpret_cast<void*>(bind_compiled)},
                                {Py_tp_repr, reinterpret_cast<void*>(repr_compiled)},
                                {Py_tp_traverse, reinterpret_cast<void*>(traverse_compiled)},
                                {Py_tp_clear, reinterpret_cast<void*>(clear_compiled)},
                                {0, nullptr}};

}  // namespace

void bind_compiled_call(nb::module_& module) {
  nb::class_<CompiledCall>(
      module, "CompiledCall", "A function compiled by kiln.compile: call it like the original.",
      nb::dynamic_attr(), nb::is_weak_referenceable(), nb::type_slots(compiled_slots))
      .def(
          "__init__",
          [](CompiledCall* self, nb::object cache, nb::object fn, nb::object slow,
             nb::object retrace, bool eager_on_check_error) {
            if (!is_guarded_cache(cache))
              throw nb::type_error("kiln: a compiled function's cache is a GuardedCache");
            new (self) CompiledCall{std::move(cache), std::move(fn), std::move(slow),
                                    std::move(retrace), eager_on_check_error};
          },
          nb::arg("cache"), nb::arg("fn"), nb::arg("slow"), nb::arg("retrace"),
          nb::arg("eager_on_check_error") = false)
      .def_rw("eager_on_check_error", &CompiledCall::eager_on_check_error)
      // replaced when the function's environment is found again (_compile.py); a call reads
      // it as a GuardedCache, unchecked, so nothing else is taken
      .def_prop_rw(
          "cache", [](CompiledCall& self) { return self.cache; },
          [](CompiledCall& self, nb::object cache) {
            if (!is_guarded_cache(cache))
              throw nb::type_error("kiln: a compiled function's cache is a GuardedCache");
            self.cache = std::move(cache);
          });
}

}  // namespace kiln::python
