// Shared by the translation units of the Python extension kiln._kiln: nanobind, the NumPy C API
// (used directly on the call path: nanobind's generic ndarray import costs more than the whole
// 3 µs call budget), and the conversions between NumPy and kiln arrays and dtypes.
#pragma once
#include <Python.h>
#include <nanobind/nanobind.h>

#define PY_ARRAY_UNIQUE_SYMBOL kiln_python_numpy_api
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#ifndef KILN_PYTHON_IMPORTS_NUMPY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <cxxabi.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/compiled_function.h"
#include "api/size_generic_graph.h"
#include "api/trace.h"
#include "kiln/array.h"
#include "kiln/dtype.h"

namespace kiln::python {

namespace nb = nanobind;

// A value made once from Python and kept for the process's life (a type looked up in a module,
// a table of NumPy's error functions), held in `slot`, a constant-initialized static. Not a C++
// function-local static with an initializer: its guard blocks a second thread with the GIL
// held while the first, importing a module (array, on the first call of four threads at once),
// gives the GIL up mid-way and waits for it back: a deadlock. Under the GIL a racing thread may
// make the value too; the first one stored is kept.
template <class T, class Make>
T* made_once(T*& slot, Make make) {
  if (slot == nullptr) {
    T* made = make();
    if (slot == nullptr) slot = made;
  }
  return slot;
}

// The module's state, in one place: NumPy type numbers to kiln dtypes, and the sentinels the
// driver compares with `is`.
// NumPy's built-in type numbers are below this (24 in NumPy 1.x and 2.x).
inline constexpr int kBuiltinTypeNumbers = 32;

struct ModuleState {
  // kiln dtype + 1 for each NumPy type number (0: no kiln dtype, e.g. complex or object).
  uint8_t dtype_by_type_number[kBuiltinTypeNumbers] = {};
  nb::object miss;   // GuardedCache.call: no entry matches
  nb::object eager;  // GuardedCache.call: the matching entry runs the function eagerly
  nb::object retrace;  // GuardedCache.call: run the function again with tracers (graph breaks)
  nb::object copyto;
};
ModuleState& state();

// The kiln dtype of a NumPy array, or nullopt for a dtype kiln lacks or a non-native byte order.
inline std::optional<DType> dtype_of_array(PyArrayObject* array) {
  PyArray_Descr* descr = PyArray_DESCR(array);
  int type_number = descr->type_num;
  if (type_number < 0 || type_number >= kBuiltinTypeNumbers) return std::nullopt;
  uint8_t code = state().dtype_by_type_number[type_number];
  if (code == 0 || !PyArray_ISNOTSWAPPED(array)) return std::nullopt;
  return static_cast<DType>(code - 1);
}
int numpy_type_number(DType dtype);  // throws kiln::Error(Type) for bfloat16

// A dtype name from a str, numpy.dtype or scalar type (numpy.float32).
DType dtype_from_object(nb::handle object);

// Borrows a NumPy array's memory (no copy). Returns nullopt for arrays kiln cannot read in place:
// unknown dtype, swapped bytes, misaligned data or byte strides that are not whole elements.
std::optional<Array> borrow_array(PyArrayObject* array);
// A NumPy array owning `array`'s kiln-allocated memory (new reference).
PyObject* to_numpy(Array&& array);
// The NumPy scalar of a 0-d `array`'s value (new reference): what NumPy returns for 0-d results.
PyObject* to_numpy_scalar(const Array& array);

// Takes the GIL back after a section that ran without it. While the interpreter finalizes,
// CPython (before 3.14) ends a daemon thread that asks for the GIL with pthread_exit; its forced
// unwind would reach nanobind's catch (...) in the binding that called us, which swallows it and
// aborts the whole process ("terminate called without an active exception"). Such a thread is
// parked instead, as Python 3.14 does: the process is exiting.
inline void restore_thread(PyThreadState* state) {
  try {
    PyEval_RestoreThread(state);
  } catch (abi::__forced_unwind&) {
    for (;;) pause();
  }
}

// nb::gil_scoped_release, with the GIL taken back by restore_thread.
class GilReleased {
 public:
  GilReleased() : state_(PyEval_SaveThread()) {}
  ~GilReleased() { restore_thread(state_); }
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;

 private:
  PyThreadState* state_;
};

// nb::gil_scoped_acquire for a thread that may not hold the GIL, parked as above when the
// interpreter is finalizing.
class GilHeld {
 public:
  GilHeld() {
    try {
      state_ = PyGILState_Ensure();
    } catch (abi::__forced_unwind&) {
      for (;;) pause();
    }
  }
  ~GilHeld() { PyGILState_Release(state_); }
  GilHeld(const GilHeld&) = delete;
  GilHeld& operator=(const GilHeld&) = delete;

 private:
  PyGILState_STATE state_;
};

// Whether a fork is waiting for the compiles in flight to end (CompileSection), holding the
// GIL meanwhile: a compile must not ask for the GIL then.
bool fork_waiting();

// A compile that runs without the GIL (compiled_bindings.cpp). A fork waits until none is in
// flight, and none starts meanwhile: one holds kiln's locks (the loaded libraries', a
// size-generic graph's) that a child would find locked for good. Made after the GIL is
// released and ended before it is taken back: a fork holds the GIL while it waits.
class CompileSection {
 public:
  CompileSection();
  ~CompileSection();
  CompileSection(const CompileSection&) = delete;
  CompileSection& operator=(const CompileSection&) = delete;
};

// Runs one compiled graph; holds what explain and the driver read about it.
// Runs `executable`, letting other Python threads run meanwhile when the run is big enough to
// be worth it (as NumPy does). The caller keeps the inputs' Python owners alive.
inline void run_releasing_gil(runtime::Executable& executable, const std::vector<Array>& inputs,
                              std::vector<Array>& outputs) {
  constexpr int64_t kReleaseFromBytes = 1 << 16;
  if (executable.io_bytes() < kReleaseFromBytes) {
    executable.run(inputs, outputs);
    return;
  }
  GilReleased released;
  executable.run(inputs, outputs);
}

struct Compiled {
  // The compiled graph; for a graph with size symbols, the variant of the latest call's sizes.
  std::shared_ptr<detail::CompiledGraph> graph;
  // A graph with size symbols (ir/shape.h): each call's sizes pick their compiled graph
  // (api/size_generic_graph.h); the hints' at once.
  std::shared_ptr<detail::SizeGenericGraph> variants;
  double compile_seconds = 0;
  int op_count = 0;
  std::vector<std::string> kernel_names;

  std::vector<Array> run(const std::vector<Array>& inputs) {
    std::vector<Array> outputs;
    run_releasing_gil(*graph->executable, inputs, outputs);
    return outputs;
  }
};

Options options_from_dict(nb::handle options);

// Shapes with size symbols (python/size_bindings.cpp): ints and kiln.Size objects.
nb::tuple shape_tuple(const ir::Shape& shape);
ir::Shape shape_from_object(nb::handle object);
ir::Dim dim_from_object(nb::handle object);  // an int or a kiln.Size
void bind_sizes(nb::module_& module);
// The Tensor API bindings (tensor_, convolution_ and indexing_bindings.cpp): the user's
// location reaches the nodes through Trace::default_location, and a result keeps its first
// tensor operand (argument `Patient`), and through it its Trace, alive.
constexpr Where kNoWhere{};
template <size_t Patient = 1>
using Keep = nb::keep_alive<0, Patient>;

// A node built into the trace of `x` at the user's current line: ops that take a shape with
// size symbols, which the public Tensor API (numbers only) has no call for.
Tensor build_on(const Tensor& x, const std::function<ir::ValueId(ir::Builder&)>& build);

void bind_errors(nb::module_& module);
void bind_tensor(nb::module_& module);
void bind_library_ops(nb::module_& module);  // part of bind_tensor: convolution, attention
void bind_indexing(nb::module_& module);     // part of bind_tensor
// part of bind_tensor: products and creation
void bind_linear_algebra_and_creation(nb::module_& module);
void bind_compiled(nb::module_& module);
void bind_cuda(nb::module_& module);
void bind_cuda_source(nb::module_& module);  // cuda_source_bindings.cpp
// An object exporting __cuda_array_interface__, or __dlpack__ on a CUDA device, as a borrowed
// device Array (nullopt: neither). `by_dlpack` (optional) is set for a DLPack export: its
// producer does not order its later work after kiln's stream, so the export must outlive the
// run's reads of it (keep_until_read). `reader_stream`: the stream kiln reads it on, which a
// DLPack producer orders its writes before (-1: the producer makes the data ready first).
std::optional<Array> borrow_cuda_array(nb::handle object, size_t position,
                                       bool* by_dlpack = nullptr, int64_t reader_stream = -1);
// Keeps DLPack-borrowed inputs (their exports) until the work queued on `stream` so far is done,
// without waiting for it on the host.
void keep_until_read(std::vector<Array> inputs, int64_t stream);
// A device result as a kiln.CudaArray; `stream`: the stream its work was queued on.
nb::object wrap_cuda_array(Array array, int64_t stream);
void bind_guarded_cache(nb::module_& module);
void bind_cache_tools(nb::module_& module);
void bind_cache_records(nb::module_& module);
void bind_compiled_call(nb::module_& module);

// GuardedCache.call on the caller's tuple and dict (kwargs may be null): the fast path of a
// compiled function (python/compiled_call.cpp).
nb::object guarded_call(nb::handle cache, PyObject* args, PyObject* kwargs);
bool is_guarded_cache(nb::handle value);  // what guarded_call may be given
void translate_kiln_error(const Error& error);

}  // namespace kiln::python
