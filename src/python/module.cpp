// kiln._kiln: the module definition, the error translation (kiln::Error -> the exception NumPy
// would raise) and the NumPy <-> kiln conversions every other binding file uses.
#define KILN_PYTHON_IMPORTS_NUMPY
#include "python/common.h"
#include "python/graph_segments.h"

#include <nanobind/stl/string.h>

#include <csignal>
#include <limits>

#include "api/logging.h"
#include "api/options.h"
#include "kiln/compile.h"
#include "kiln/error.h"
#include "runtime/process.h"
#include "runtime/cuda/cuda_driver.h"

namespace kiln::python {

ModuleState& state() {
  static ModuleState* instance = new ModuleState();  // never destroyed: outlives interpreter exit
  return *instance;
}

namespace {

// Filled once the NumPy API is imported: every NumPy type number maps to at most one kiln dtype
// (int64 has two numbers, long and longlong, on Linux; both map to Int64).
void fill_dtype_table() {
  ModuleState& module_state = state();
  for (int type_number = 0; type_number < kBuiltinTypeNumbers; ++type_number) {
    PyArray_Descr* descr = PyArray_DescrFromType(type_number);
    if (descr == nullptr) {
      PyErr_Clear();
      continue;
    }
    std::optional<DType> dtype;
    int size = static_cast<int>(PyDataType_ELSIZE(descr));
    switch (descr->kind) {
      case 'b': dtype = DType::Bool; break;
      case 'i':
        dtype = size == 1 ? DType::Int8 : size == 2 ? DType::Int16 : size == 4 ? DType::Int32
                                                                                : DType::Int64;
        break;
      case 'u':
        dtype = size == 1 ? DType::UInt8 : size == 2 ? DType::UInt16 : size == 4 ? DType::UInt32
                                                                                 : DType::UInt64;
        break;
      case 'f':
        if (size == 2) dtype = DType::Float16;
        if (size == 4) dtype = DType::Float32;
        if (size == 8) dtype = DType::Float64;
        break;
      case 'c':
        if (size == 8) dtype = DType::Complex64;
        if (size == 16) dtype = DType::Complex128;
        break;
      default: break;
    }
    if (dtype && size == dtype_size(*dtype))
      module_state.dtype_by_type_number[type_number] = static_cast<uint8_t>(*dtype) + 1;
    Py_DECREF(descr);
  }
}

// Exception classes the driver re-exports as kiln.Unsupported / kiln.GraphBreak.
PyObject* unsupported_type = nullptr;
PyObject* compiler_error_type = nullptr;  // Toolchain and Internal errors
PyObject* axis_error_type = nullptr;
PyObject* linalg_error_type = nullptr;  // numpy.linalg.LinAlgError
PyObject* index_or_runtime_error_type = nullptr;  // ErrorKind::IndexOrRuntime
PyObject* get_signal_handler = nullptr;  // _signal.getsignal
PyObject* default_int_handler = nullptr;  // _signal.default_int_handler

// Whether a Ctrl-C should end the compile this thread waits for (runtime/process.h): a SIGINT
// arrived and Python's handler for it is the one that raises KeyboardInterrupt. Only detected
// here, on Python's main thread, with no Python code run: the signal is made pending again,
// so that its handler (the user's own too) runs once the call is back in Python
// (translate_kiln_error), never inside the compile, which holds kiln's locks.
unsigned long main_thread = 0;  // Python's main thread, the one its signal handlers run in

bool interrupt_requested() {
  // Without the GIL: only Python's main thread sees signals, and the GIL is asked for only
  // where nothing can hold it while waiting for this compile (a fork in another thread does).
  if (PyThread_get_thread_ident() != main_thread || fork_waiting()) return false;
  GilHeld held;
  if (!PyOS_InterruptOccurred()) return false;
  // _signal's getsignal, written in C: no bytecode runs, so no pending handler either.
  PyObject* handler = PyObject_CallFunction(get_signal_handler, "i", SIGINT);
  if (handler == nullptr) PyErr_Clear();
  const bool raises = handler == default_int_handler;
  Py_XDECREF(handler);
  PyErr_SetInterruptEx(SIGINT);
  return raises;
}

}  // namespace

void translate_kiln_error(const Error& error) {
  const char* message = error.what();
  switch (error.kind()) {
    case ErrorKind::Value: PyErr_SetString(PyExc_ValueError, message); return;
    case ErrorKind::Type: PyErr_SetString(PyExc_TypeError, message); return;
    case ErrorKind::Axis: {
      // AxisError(message) with one argument uses it as the whole message.
      PyObject* instance = PyObject_CallFunction(axis_error_type, "s", message);
      if (instance == nullptr) return;
      PyErr_SetObject(axis_error_type, instance);
      Py_DECREF(instance);
      return;
    }
    case ErrorKind::Index: PyErr_SetString(PyExc_IndexError, message); return;
    case ErrorKind::Runtime: PyErr_SetString(PyExc_RuntimeError, message); return;
    case ErrorKind::IndexOrRuntime: PyErr_SetString(index_or_runtime_error_type, message); return;
    case ErrorKind::ZeroDivision: PyErr_SetString(PyExc_ZeroDivisionError, message); return;
    case ErrorKind::LinAlg: PyErr_SetString(linalg_error_type, message); return;
    case ErrorKind::Memory: PyErr_SetString(PyExc_MemoryError, message); return;
    case ErrorKind::Overflow: PyErr_SetString(PyExc_OverflowError, message); return;
    case ErrorKind::Permission: PyErr_SetString(PyExc_PermissionError, message); return;
    case ErrorKind::Unsupported: PyErr_SetString(unsupported_type, message); return;
    case ErrorKind::Toolchain: PyErr_SetString(compiler_error_type, message); return;
    case ErrorKind::Interrupted:
      // The SIGINT that ended the compile is pending again (interrupt_requested): its handler
      // runs now, back in Python with no lock of kiln's held, and raises KeyboardInterrupt.
      if (PyErr_CheckSignals() == 0 && !PyErr_Occurred())
        PyErr_SetNone(PyExc_KeyboardInterrupt);
      return;
    case ErrorKind::Internal:
      PyErr_SetString(compiler_error_type,
                      (std::string("kiln internal error (please report): ") + message).c_str());
      return;
  }
  PyErr_SetString(PyExc_RuntimeError, message);
}

int numpy_type_number(DType dtype) {
  switch (dtype) {
    case DType::Bool: return NPY_BOOL;
    case DType::Int8: return NPY_INT8;
    case DType::Int16: return NPY_INT16;
    case DType::Int32: return NPY_INT32;
    case DType::Int64: return NPY_INT64;
    case DType::UInt8: return NPY_UINT8;
    case DType::UInt16: return NPY_UINT16;
    case DType::UInt32: return NPY_UINT32;
    case DType::UInt64: return NPY_UINT64;
    case DType::Float16: return NPY_FLOAT16;
    case DType::Float32: return NPY_FLOAT32;
    case DType::Float64: return NPY_FLOAT64;
    case DType::Complex64: return NPY_COMPLEX64;
    case DType::Complex128: return NPY_COMPLEX128;
    case DType::BFloat16: break;
  }
  throw Error(ErrorKind::Type, error_message("", "", "NumPy has no bfloat16 arrays"));
}

DType dtype_from_object(nb::handle object) {
  if (nb::isinstance<nb::str>(object)) return dtype_from_name(nb::cast<std::string>(object));
  // numpy.dtype objects, scalar types (numpy.float32) and Python's float/int/bool.
  nb::object numpy = nb::module_::import_("numpy");
  nb::object name = numpy.attr("dtype")(object).attr("name");
  return dtype_from_name(nb::cast<std::string>(name));
}

std::optional<Array> borrow_array(PyArrayObject* array) {
  std::optional<DType> dtype = dtype_of_array(array);
  if (!dtype || !PyArray_ISALIGNED(array)) return std::nullopt;
  int ndim = PyArray_NDIM(array);
  const npy_intp* dims = PyArray_DIMS(array);
  std::vector<int64_t> shape(dims, dims + ndim);
  std::vector<int64_t> strides;
  if (!PyArray_IS_C_CONTIGUOUS(array)) {
    const npy_intp* byte_strides = PyArray_STRIDES(array);
    int64_t item = dtype_size(*dtype);
    strides.resize(static_cast<size_t>(ndim));
    for (int d = 0; d < ndim; ++d) {
      if (byte_strides[d] % item != 0) return std::nullopt;
      strides[static_cast<size_t>(d)] = byte_strides[d] / item;
    }
  }
  return Array::borrow(PyArray_DATA(array), *dtype, std::move(shape), std::move(strides));
}

PyObject* to_numpy(Array&& array) {
  // NumPy has no bfloat16: such a result leaves as its bits, a uint16 array (torch views it).
  int type_number =
      array.dtype() == DType::BFloat16 ? NPY_UINT16 : numpy_type_number(array.dtype());
  int ndim = array.ndim();
  std::vector<npy_intp> dims(array.shape().begin(), array.shape().end());
  if (array.data() == nullptr) {  // size 0: nothing to own
    return PyArray_ZEROS(ndim, dims.data(), type_number, 0);
  }
  auto* holder = new Array(std::move(array));
  PyObject* capsule = PyCapsule_New(holder, "kiln.Array", [](PyObject* self) {
    delete static_cast<Array*>(PyCapsule_GetPointer(self, "kiln.Array"));
  });
  if (capsule == nullptr) {
    delete holder;
    return nullptr;
  }
  PyObject* result = PyArray_New(&PyArray_Type, ndim, dims.data(), type_number, nullptr,
                                 holder->data(), 0, NPY_ARRAY_CARRAY, nullptr);
  if (result == nullptr) {
    Py_DECREF(capsule);
    return nullptr;
  }
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(result), capsule) < 0) {
    Py_DECREF(result);
    return nullptr;
  }
  return result;
}

PyObject* to_numpy_scalar(const Array& array) {
  PyArray_Descr* descr = PyArray_DescrFromType(numpy_type_number(array.dtype()));
  if (descr == nullptr) return nullptr;
  PyObject* scalar = PyArray_Scalar(const_cast<void*>(array.data()), descr, nullptr);
  Py_DECREF(descr);
  return scalar;
}

namespace {

// An option's value of the wrong type is a TypeError naming the option, not nanobind's bare
// std::bad_cast.
[[noreturn]] void throw_option_type(const std::string& name, const char* wanted, nb::handle value) {
  throw Error(ErrorKind::Type,
              error_message("compile", "",
                            "options['" + name + "'] must be " + wanted + ", got " +
                                Py_TYPE(value.ptr())->tp_name));
}

std::string option_text(const std::string& name, nb::handle value) {
  if (!nb::isinstance<nb::str>(value)) throw_option_type(name, "a str", value);
  return nb::cast<std::string>(value);
}

// A directory: a str or an os.PathLike giving one (pathlib.Path), as open() takes it.
std::string option_path(const std::string& name, nb::handle value) {
  PyObject* path = PyOS_FSPath(value.ptr());
  if (path == nullptr || !PyUnicode_Check(path)) {
    Py_XDECREF(path);
    PyErr_Clear();
    throw_option_type(name, "a str or os.PathLike", value);
  }
  return nb::cast<std::string>(nb::steal(path));
}

bool option_flag(const std::string& name, nb::handle value) {
  if (!PyBool_Check(value.ptr())) throw_option_type(name, "True or False", value);
  return value.ptr() == Py_True;
}

int option_count(const std::string& name, nb::handle value) {
  if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()))
    throw_option_type(name, "an int", value);
  int overflow = 0;
  long long number = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow != 0 || number > std::numeric_limits<int>::max() ||
      number < std::numeric_limits<int>::min())
    throw Error(ErrorKind::Value, error_message("compile", "",
                                                "options['" + name + "'] is out of range, got " +
                                                    nb::cast<std::string>(nb::str(value))));
  return static_cast<int>(number);
}

}  // namespace

Options options_from_dict(nb::handle options) {
  Options result;
  if (options.is_none()) return result;
  if (!nb::isinstance<nb::dict>(options))
    throw Error(ErrorKind::Type, error_message("compile", "", "options must be a dict"));
  for (auto [key, value] : nb::borrow<nb::dict>(options)) {
    std::string name = nb::cast<std::string>(nb::str(key));
    if (name == "mode") {
      result.mode = option_text(name, value);
    } else if (name == "cache_dir") {
      result.cache_dir = value.is_none() ? "" : option_path(name, value);
    } else if (name == "disk_cache") {
      result.disk_cache = option_flag(name, value);
    } else if (name == "num_threads") {
      result.num_threads = option_count(name, value);
    } else if (name == "allow_reassociation") {
      result.allow_reassociation = option_flag(name, value);
    } else if (name == "device") {
      result.device = option_text(name, nb::str(value));
    } else if (name == "unsupported_ops") {  // read by the torch front end (kiln.torch)
      std::string policy = option_text(name, value);
      if (policy != "eager" && policy != "error")
        throw Error(ErrorKind::Value, error_message("compile", "",
                                                    "options['unsupported_ops'] must be 'eager' "
                                                    "or 'error', got '" + policy + "'"));
    } else {
      std::string valid;
      for (const api::OptionDescription& option : api::option_descriptions())
        valid += (valid.empty() ? "" : ", ") + std::string(option.name);
      throw Error(ErrorKind::Value,
                  error_message("compile", "",
                                "unknown option '" + name + "' (valid: " + valid +
                                    "; see kiln.list_options())"));
    }
  }
  api::check_options(result);
  return result;
}

void bind_errors(nb::module_& module) {
  unsupported_type = PyErr_NewExceptionWithDoc(
      "kiln.Unsupported", "An op or feature kiln does not handle.", PyExc_RuntimeError, nullptr);
  module.attr("Unsupported") = nb::handle(unsupported_type);
  compiler_error_type = PyErr_NewExceptionWithDoc(
      "kiln.CompilerError",
      "kiln itself failed (the C++ compiler, or an internal error): never the user's mistake. "
      "kiln.config.suppress_errors turns it into a warning and an eager run.",
      PyExc_RuntimeError, nullptr);
  module.attr("CompilerError") = nb::handle(compiler_error_type);
  {
    PyObject* bases = PyTuple_Pack(2, PyExc_IndexError, PyExc_RuntimeError);
    index_or_runtime_error_type = PyErr_NewExceptionWithDoc(
        "kiln.IndexOutOfRange",
        "An index out of bounds where eager torch raises IndexError or RuntimeError by the "
        "tensor's layout (index_select): both, so either except clause catches it.",
        bases, nullptr);
    Py_XDECREF(bases);
    if (index_or_runtime_error_type == nullptr) throw nb::python_error();
    module.attr("IndexOutOfRange") = nb::handle(index_or_runtime_error_type);
  }
  nb::object numpy_exceptions = nb::module_::import_("numpy");
  nb::object axis_error = nb::getattr(numpy_exceptions, "exceptions", nb::none()).is_none()
                              ? numpy_exceptions.attr("AxisError")  // NumPy < 1.25
                              : numpy_exceptions.attr("exceptions").attr("AxisError");
  axis_error_type = axis_error.release().ptr();
  nb::object linalg_error = numpy_exceptions.attr("linalg").attr("LinAlgError");
  linalg_error_type = linalg_error.release().ptr();
  nb::object signals = nb::module_::import_("_signal");
  get_signal_handler = nb::object(signals.attr("getsignal")).release().ptr();
  default_int_handler = nb::object(signals.attr("default_int_handler")).release().ptr();
  main_thread = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  runtime::set_interruption_check(interrupt_requested);
  nb::register_exception_translator([](const std::exception_ptr& pointer, void*) {
    try {
      std::rethrow_exception(pointer);
    } catch (const Error& error) {
      translate_kiln_error(error);
    }
  });
}

}  // namespace kiln::python

NB_MODULE(_kiln, module) {
  using namespace kiln::python;
  if (_import_array() < 0) throw nb::python_error();
  // Compiled graphs held by torch.compile'd modules, Dynamo's caches or user globals are still
  // alive when the interpreter exits; nanobind's leak report would print them on every exit.
  nb::set_leak_warnings(false);
  fill_dtype_table();
  ModuleState& module_state = state();
  nb::object builtins = nb::module_::import_("builtins");
  module_state.miss = builtins.attr("object")();
  module_state.eager = builtins.attr("object")();
  module_state.retrace = builtins.attr("object")();
  module.attr("MISS") = module_state.miss;
  module.attr("EAGER") = module_state.eager;
  module.attr("RETRACE") = module_state.retrace;
  module.attr("__version__") = KILN_PYTHON_VERSION;

  bind_errors(module);
  module.def("list_mode_options", &kiln::list_mode_options,
             "The settings behind each mode word, one line each.");
  module.def("list_options", &kiln::list_options, "Every compile option with its meaning.");
  module.def("cuda_unavailable_reason", &kiln::runtime::cuda::unavailable_reason,
             "Why device='cuda' cannot run here ('' when a GPU and its driver are usable).");
  module.def("set_log_channels", &kiln::api::set_log_channels, nb::arg("comma_list"),
             "Turns KILN_LOGS channels on, as the environment variable does ('all,-perf').");
  module.def("check_log_environment", &kiln::api::check_log_environment,
             "Raises ValueError when KILN_LOGS names an unknown channel.");
  module.def("log_channels", &kiln::api::channel_names, "The KILN_LOGS channel names.");
  module.def(
      "log_enabled",
      [](const std::string& name) { return kiln::api::log_enabled(kiln::api::channel_from_name(name)); },
      nb::arg("channel"));
  module.def(
      "log",
      [](const std::string& name, const std::string& text) {
        kiln::api::log(kiln::api::channel_from_name(name), text);
      },
      nb::arg("channel"), nb::arg("text"), "Writes to a KILN_LOGS channel (when it is on).");

  bind_tensor(module);
  bind_compiled(module);
  bind_cuda(module);
  bind_cuda_source(module);
  bind_guarded_cache(module);
  bind_compiled_call(module);
  bind_graph_segments(module);
  bind_cache_tools(module);
  bind_cache_records(module);
}
