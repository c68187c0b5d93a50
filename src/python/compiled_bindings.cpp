// compile_graph and Compiled: the pipeline after tracing (kiln::detail::compile_graph) on a
// Trace recorded from Python, and running its result on NumPy arrays with no copy of the inputs.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <shared_mutex>

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "api/pipeline.h"
#include "api/runtime_checks.h"
#include "ir/specialize.h"
#include "ir/ops.h"
#include "kiln/compile.h"
#include "python/common.h"
#include "python/graph_segments.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_executable.h"

namespace kiln::python {
namespace {

std::shared_mutex* gate = new std::shared_mutex;  // never destroyed: a fork may follow exit

std::shared_mutex& compile_gate() { return *gate; }

// Registered after libkiln's Executable::ForkGuard, so its prepare runs first: a compile in
// flight may still need the ForkGuard's mutex (an executable's constructor) to finish. The
// child gets a new gate: a pthread rwlock records its writer's thread id, which the child's
// one thread does not have, and its unlock there would corrupt it.
// fork_waiting is set before the fork waits for the gate, holding the GIL: a compile in
// flight must not ask for the GIL then (module.cpp's interrupt_requested), or neither ends.
std::atomic<bool> fork_waiting_now{false};
[[maybe_unused]] const int compile_fork_guard = pthread_atfork(
    [] {
      fork_waiting_now = true;
      compile_gate().lock();
    },
    [] {
      compile_gate().unlock();
      fork_waiting_now = false;
    },
    [] {
      gate = new std::shared_mutex;
      fork_waiting_now = false;
    });

}  // namespace

bool fork_waiting() { return fork_waiting_now.load(); }

CompileSection::CompileSection() { compile_gate().lock_shared(); }
CompileSection::~CompileSection() { compile_gate().unlock_shared(); }

namespace {

Array borrow_or_throw(nb::handle object, size_t position, bool* by_dlpack = nullptr,
                      int64_t reader_stream = -1) {
  if (!PyArray_Check(object.ptr())) {
    if (std::optional<Array> device =
            borrow_cuda_array(object, position, by_dlpack, reader_stream))
      return *device;
    throw Error(ErrorKind::Type, error_message("run", "", "input " + std::to_string(position) +
                                                              " is not a NumPy array"));
  }
  std::optional<Array> array = borrow_array(reinterpret_cast<PyArrayObject*>(object.ptr()));
  if (!array)
    throw Error(ErrorKind::Type,
                error_message("run", "", "input " + std::to_string(position) +
                                             " has a dtype or memory layout kiln cannot read "
                                             "(complex, object, byte-swapped or misaligned)"));
  return *array;
}

// NumPy has no bfloat16: a bfloat16 graph input arrives as its bits, in a 16-bit integer array.
Array as_graph_input(Array array, DType expected) {
  bool bits = array.dtype() == DType::UInt16 || array.dtype() == DType::Int16;
  if (expected != DType::BFloat16 || !bits) return array;
  return Array::borrow(array.data(), DType::BFloat16, array.shape(), array.strides(), nullptr,
                       array.device());
}

// A torch CPU tensor as a graph input of `dtype` (the torch front end's symbolic graphs, whose
// inputs Dynamo guards): its pointer, shape and strides, read in place. A NumPy view of each
// (tensor.numpy()) cost two thirds of a decode step's conversions.
Array borrow_cpu_tensor(nb::handle tensor, DType dtype, size_t position) {
  static PyObject* const data_ptr = PyUnicode_InternFromString("data_ptr");
  static PyObject* const shape = PyUnicode_InternFromString("shape");
  static PyObject* const stride = PyUnicode_InternFromString("stride");
  static PyObject* const element_size = PyUnicode_InternFromString("element_size");
  nb::object size = nb::steal(PyObject_CallMethodNoArgs(tensor.ptr(), element_size));
  if (!size) throw nb::python_error();
  if (nb::cast<int64_t>(size) != static_cast<int64_t>(dtype_size(dtype)))
    throw Error(ErrorKind::Type, error_message("run", "", "input " + std::to_string(position) +
                                                              " is not a tensor of the graph's " +
                                                              std::string(dtype_name(dtype))));
  nb::object address = nb::steal(PyObject_CallMethodNoArgs(tensor.ptr(), data_ptr));
  nb::object extents = nb::steal(PyObject_GetAttr(tensor.ptr(), shape));
  nb::object strides = nb::steal(PyObject_CallMethodNoArgs(tensor.ptr(), stride));
  if (!address || !extents || !strides) throw nb::python_error();
  return Array::borrow(reinterpret_cast<void*>(nb::cast<uintptr_t>(address)), dtype,
                       nb::cast<std::vector<int64_t>>(extents),
                       nb::cast<std::vector<int64_t>>(strides), nullptr, Device::Cpu);
}

std::shared_ptr<Compiled> compile(detail::Trace& trace, const std::vector<Tensor>& outputs,
                                  nb::handle input_strides, nb::handle options, bool segment,
                                  const std::vector<int32_t>& donated) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<int64_t>> strides;
  if (!input_strides.is_none())
    strides = nb::cast<std::vector<std::vector<int64_t>>>(input_strides);
  strides.resize(trace.graph.inputs().size());
  auto result = std::make_shared<Compiled>();
  Segment part;
  if (segment) {
    part = extract_segment(trace, outputs);
    std::vector<std::vector<int64_t>> read;
    for (int64_t position : part.inputs) read.push_back(strides[static_cast<size_t>(position)]);
    strides = std::move(read);
  } else {
    std::vector<ir::ValueId> ids;
    for (const Tensor& output : outputs) {
      if (output.trace() != &trace)
        throw Error(ErrorKind::Value,
                    error_message("compile", trace.default_location,
                                  "an output was not computed in this trace"));
      ids.push_back(output.id());
    }
    part.checks = detail::append_check_outputs(trace, ids);
    trace.graph.set_outputs(ids);
  }
  // The compile runs without the GIL (the C++ compiler takes up to seconds; other Python
  // threads go on meanwhile), so it reads nothing Python owns: its own copy of the graph (a
  // leaked tracer could still add nodes to the trace's), the options converted first.
  ir::Graph graph = segment ? std::move(part.graph) : trace.graph;
  std::vector<runtime::RuntimeCheck> checks = std::move(part.checks);
  Options compile_options = options_from_dict(options);
  compile_options.donated = donated;
  {
    GilReleased released;
    CompileSection section;
    CompileStats stats;
    if (!graph.symbol_hints().empty()) {
      result->variants = std::make_shared<detail::SizeGenericGraph>(
          graph, strides, compile_options, std::move(checks));
      result->graph = result->variants->for_sizes(graph.symbol_hints());
    } else {
      result->graph =
          detail::compile_graph(graph, strides, compile_options, stats, std::move(checks));
    }
    for (const ir::Node& node : result->graph->graph.nodes())
      if (node.op != ir::Op::parameter) ++result->op_count;
    for (const sched::Kernel& kernel : result->graph->executable->program().kernels)
      result->kernel_names.push_back(kernel.name);
  }
  result->compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

nb::list run(Compiled& compiled, nb::sequence inputs, nb::handle out, int64_t stream,
             bool cpu_tensors) {
  std::vector<Array> arrays;
  size_t position = 0;
  bool by_dlpack = false;
  const ir::Graph& graph = compiled.variants ? compiled.variants->graph() : compiled.graph->graph;
  for (nb::handle input : inputs) {
    const bool graph_input = position < graph.inputs().size();
    if (cpu_tensors && graph_input) {
      arrays.push_back(
          borrow_cpu_tensor(input, graph.node(graph.inputs()[position]).dtype, position));
      ++position;
      continue;
    }
    Array array = borrow_or_throw(input, position, &by_dlpack, stream);
    if (graph_input)
      array = as_graph_input(std::move(array), graph.node(graph.inputs()[position]).dtype);
    arrays.push_back(std::move(array));
    ++position;
  }
  // This call's graph, held here: another thread's call (of other sizes) may replace
  // compiled.graph, and drop the last other reference, while this one runs without the GIL.
  std::shared_ptr<detail::CompiledGraph> graph_here = compiled.graph;
  if (compiled.variants) {
    std::vector<std::vector<int64_t>> shapes;
    for (const Array& array : arrays) shapes.push_back(array.shape());
    std::vector<int64_t> sizes = ir::bind_sizes(graph, shapes);
    std::shared_ptr<detail::SizeGenericGraph> variants = compiled.variants;
    {
      GilReleased released;  // a new size may compile (for_sizes locks its own state)
      CompileSection section;
      graph_here = variants->for_sizes(sizes);
    }
    compiled.graph = graph_here;
  }
  std::vector<Array> outputs;
  if (!out.is_none()) {
    position = 0;
    for (nb::handle given : nb::borrow<nb::sequence>(out))
      outputs.push_back(borrow_or_throw(given, position++));
  }
  struct StreamScope {  // the caller's stream for this call (runtime/cuda/cuda_executable.h)
    explicit StreamScope(int64_t stream) { runtime::set_cuda_stream(reinterpret_cast<void*>(stream)); }
    ~StreamScope() { runtime::set_cuda_stream(nullptr); }
  } stream_scope(stream);
  run_releasing_gil(*graph_here->executable, arrays, outputs);
  // DLPack inputs would be released when this returns, their producer unaware of the reads
  if (by_dlpack) keep_until_read(std::move(arrays), stream);
  nb::list results;
  if (!out.is_none()) {
    for (nb::handle given : nb::borrow<nb::sequence>(out)) results.append(given);
    return results;
  }
  for (Array& output : outputs) {
    if (output.device() == Device::Cuda) {
      results.append(wrap_cuda_array(std::move(output), stream));
      continue;
    }
    PyObject* converted = to_numpy(std::move(output));
    if (converted == nullptr) throw nb::python_error();
    results.append(nb::steal(converted));
  }
  return results;
}

// Whether strides lay a shape out row-major (dimensions of size 1 may have any stride, as in
// torch's and NumPy's sense of contiguous).
bool row_major(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

// The caller's dtype, shape and row-major strides of a program buffer: a complex argument's
// buffer is the real (..., 2) array of its parts.
struct CallerLayout {
  DType dtype;
  std::vector<int64_t> shape, strides;
};
CallerLayout caller_layout(const sched::Buffer& buffer, bool complex) {
  CallerLayout layout{buffer.dtype, buffer.shape, buffer.strides};
  if (complex && !layout.shape.empty()) {
    layout.dtype = buffer.dtype == DType::Float32 ? DType::Complex64 : DType::Complex128;
    layout.shape.pop_back();
    layout.strides.pop_back();
    for (int64_t& stride : layout.strides) stride /= 2;
  }
  return layout;
}

// A torch tensor (anything with data_ptr(), is_contiguous() and stride()) on `device` as a
// program buffer of `dtype`, `shape` and `strides`: its pointer, and its strides, which run()
// checks against the compiled ones (the caller's graph guards shape and dtype, as Dynamo does).
Array borrow_tensor_as(nb::handle tensor, DType dtype, const std::vector<int64_t>& shape,
                       const std::vector<int64_t>& buffer_strides, Device device) {
  // A model's call passes hundreds: the method names are made once (and never freed: they
  // outlive the interpreter's shutdown).
  static PyObject* const data_ptr = PyUnicode_InternFromString("data_ptr");
  static PyObject* const stride = PyUnicode_InternFromString("stride");
  static PyObject* const is_contiguous = PyUnicode_InternFromString("is_contiguous");
  nb::object address = nb::steal(PyObject_CallMethodNoArgs(tensor.ptr(), data_ptr));
  if (!address) throw nb::python_error();
  void* data = reinterpret_cast<void*>(nb::cast<uintptr_t>(address));
  // A row-major buffer takes a contiguous tensor as it is: torch's is_contiguous() answers
  // without building the tuple stride() returns (a quarter of a call's conversion).
  if (row_major(shape, buffer_strides)) {
    nb::object contiguous = nb::steal(PyObject_CallMethodNoArgs(tensor.ptr(), is_contiguous));
    if (!contiguous) throw nb::python_error();
    if (contiguous.ptr() == Py_True)
      return Array::borrow(data, dtype, shape, buffer_strides, nullptr, device);
  }
  nb::object strides = nb::steal(PyObject_CallMethodNoArgs(tensor.ptr(), stride));
  if (!strides) throw nb::python_error();
  return Array::borrow(data, dtype, shape, nb::cast<std::vector<int64_t>>(strides), nullptr,
                       device);
}

// The tensor filling `buffer`: a complex one (`complex`) fills the real (..., 2) buffer of its
// parts, borrowed complex (run() views it as real).
Array borrow_tensor(nb::handle tensor, const sched::Buffer& buffer, Device device,
                    bool complex) {
  if (!complex) return borrow_tensor_as(tensor, buffer.dtype, buffer.shape, buffer.strides, device);
  const CallerLayout layout = caller_layout(buffer, true);
  return borrow_tensor_as(tensor, layout.dtype, layout.shape, layout.strides, device);
}

// An output given by its address (the torch front end's pooled results, which it allocates
// row-major from output_shapes, as the program's output buffers are laid out); 0: none (an
// output written into its input, Compiled.in_place_outputs).
Array borrow_address(nb::handle address, const sched::Buffer& buffer, Device device) {
  const auto pointer = nb::cast<uintptr_t>(address);
  if (pointer == 0) return Array();
  return Array::borrow(reinterpret_cast<void*>(pointer), buffer.dtype, buffer.shape,
                       buffer.strides, nullptr, device);
}

// The torch front end's call (the backend's, and wrap_numpy's on CUDA tensors): inputs read in
// place, results written into the caller's outputs (torch tensors it allocated from the output
// shapes), on the device the graph was compiled for; on CUDA the work is queued on `stream`.
// No CUDA Array Interface dictionaries or NumPy views: a model's call passes hundreds of
// parameters, and a tiny function's call is mostly this conversion.
void run_tensors(Compiled& compiled, nb::sequence inputs, nb::sequence outputs, int64_t stream,
                 bool matmul_tf32, bool convolution_tf32) {
  if (compiled.variants)
    throw Error(ErrorKind::Internal, "kiln: run_tensors: a graph with size symbols");
  runtime::Executable& executable = *compiled.graph->executable;
  const Device device = dynamic_cast<runtime::CudaExecutable*>(&executable) != nullptr
                            ? Device::Cuda
                            : Device::Cpu;
  const sched::Program& program = executable.program();
  std::vector<Array> arrays, results;
  size_t k = 0;
  for (nb::handle input : inputs) {
    if (k >= executable.input_buffers().size())
      throw Error(ErrorKind::Value, "kiln: run_tensors: too many inputs");
    arrays.push_back(borrow_tensor(
        input, program.buffers[static_cast<size_t>(executable.input_buffers()[k])], device,
        executable.complex_input(k)));
    ++k;
  }
  k = 0;
  for (nb::handle output : outputs) {
    if (k >= executable.output_count())
      throw Error(ErrorKind::Value, "kiln: run_tensors: too many outputs");
    const sched::Buffer& buffer = program.buffers[static_cast<size_t>(program.output_buffers[k])];
    results.push_back(nb::isinstance<nb::int_>(output)
                          ? borrow_address(output, buffer, device)
                          : borrow_tensor(output, buffer, device, executable.complex_output(k)));
    ++k;
  }
  if (device == Device::Cpu) return run_releasing_gil(executable, arrays, results);
  runtime::set_cuda_stream(reinterpret_cast<void*>(stream));
  runtime::set_cuda_math({matmul_tf32, convolution_tf32});
  struct Reset {
    ~Reset() {
      runtime::set_cuda_stream(nullptr);
      runtime::set_cuda_math({});
    }
  } reset;
  run_releasing_gil(executable, arrays, results);
}

std::vector<std::vector<int64_t>> output_shapes(const Compiled& c) {
  const runtime::Executable& executable = *c.graph->executable;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t k = 0; k < executable.output_count(); ++k)  // (the caller's: complex ones too)
    shapes.push_back(caller_layout(executable.program().buffers[static_cast<size_t>(
                                       executable.program().output_buffers[k])],
                                   executable.complex_output(k)).shape);
  return shapes;
}

}  // namespace

void bind_compiled(nb::module_& module) {
  nb::class_<Compiled>(module, "Compiled", "One graph compiled to native kernels.")
      .def("run", &run, nb::arg("inputs"), nb::arg("out").none() = nb::none(),
           nb::arg("stream") = 0, nb::arg("cpu_tensors") = false,
           "Runs on NumPy arrays (borrowed, any strides) or, compiled for CUDA, on device arrays "
           "(__cuda_array_interface__) on `stream` (a CUstream handle, 0: the default); returns "
           "new arrays (kiln.CudaArray for device results), or `out`. `cpu_tensors`: the graph's "
           "inputs are torch CPU tensors of its dtypes (the torch front end's), read in place.")
      .def("run_tensors", &run_tensors, nb::arg("inputs"), nb::arg("outputs"),
           nb::arg("stream") = 0, nb::arg("matmul_tf32") = false,
           nb::arg("convolution_tf32") = false,
           "Runs on torch tensors of the graph's device (data_ptr(), stride()) into `outputs` "
           "(tensors, or addresses of row-major blocks), allocated by the caller with "
           "output_shapes; on CUDA on `stream`, the TF32 flags torch's.")
      .def_prop_ro("output_shapes", &output_shapes)
      .def_prop_ro("in_place_outputs",
                   [](const Compiled& c) { return c.graph->executable->in_place_outputs(); },
                   "(output, input) pairs: outputs written into the input donated to them; a run "
                   "leaves such an output in its input (run_tensors writes no given tensor).")
      .def_prop_ro("kernels", [](const Compiled& c) { return c.kernel_names; })
      .def_prop_ro("kernel_count", [](const Compiled& c) { return c.kernel_names.size(); })
      .def_prop_ro("op_count", [](const Compiled& c) { return c.op_count; })
      .def_prop_ro("source", [](const Compiled& c) { return c.graph->source_text(); })
      .def_prop_ro("source_path", [](const Compiled& c) { return c.graph->source_path; })
      .def_prop_ro("graph_text", [](const Compiled& c) { return c.graph->graph_text(); })
      .def_prop_ro("compile_seconds", [](const Compiled& c) { return c.compile_seconds; })

      .def_prop_ro("output_count",
                   [](const Compiled& c) { return c.graph->executable->output_count(); });
  module.def(
      "check_options", [](nb::handle options) { options_from_dict(options); },
      nb::arg("options").none(), "Raises ValueError/TypeError for an unknown option or mode.");
  module.def("compile_graph", &compile, nb::arg("trace"), nb::arg("outputs"),
             nb::arg("input_strides").none() = nb::none(), nb::arg("options").none() = nb::none(),
             nb::arg("segment") = false, nb::arg("donated") = std::vector<int32_t>{},
             "Runs the passes, the scheduler, codegen and the toolchain (or the disk cache) on "
             "the traced graph. input_strides: element strides per input, [] for contiguous. "
             "donated: by output, the input whose memory it may be written into, or -1 "
             "(Compiled.in_place_outputs says which were). "
             "segment: only what the outputs reach, run on the inputs segment_of names "
             "(python/graph_segments.h).");
}

}  // namespace kiln::python
