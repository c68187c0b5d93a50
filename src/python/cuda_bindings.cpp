// Device arrays across the Python boundary, with no copy: by the CUDA Array Interface (version
// 3: what torch CUDA tensors, CuPy arrays and Numba device arrays export) or by DLPack (JAX
// arrays, anything with __dlpack__ on a CUDA device), borrowed by pointer for a run on the GPU;
// kiln's device results (kiln.CudaArray) are handed out both ways.
#include <deque>

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "kiln/error.h"
#include "python/common.h"
#include "runtime/cuda/cuda_driver.h"

namespace kiln::python {
namespace {

// "<f4", "|b1", "<i8" ... -> kiln's dtype; nullopt for what kiln does not read (byte-swapped,
// complex is read as such).
std::optional<DType> dtype_from_typestr(const std::string& typestr) {
  if (typestr.size() < 3 || typestr[0] == '>') return std::nullopt;
  char kind = typestr[1];
  int bytes = std::atoi(typestr.c_str() + 2);
  switch (kind) {
    case 'b': return bytes == 1 ? std::optional(DType::Bool) : std::nullopt;
    case 'i': return bytes == 1 ? DType::Int8 : bytes == 2 ? DType::Int16 : bytes == 4 ? DType::Int32 : DType::Int64;
    case 'u': return bytes == 1 ? DType::UInt8 : bytes == 2 ? DType::UInt16 : bytes == 4 ? DType::UInt32 : DType::UInt64;
    case 'f': return bytes == 2 ? DType::Float16 : bytes == 4 ? DType::Float32 : DType::Float64;
    case 'c': return bytes == 8 ? DType::Complex64 : DType::Complex128;
    default: return std::nullopt;
  }
}

std::string typestr_of(DType dtype) {
  const char* kind = dtype == DType::Bool ? "b" : is_float(dtype) ? "f" : is_complex(dtype) ? "c"
                     : is_signed_integer(dtype) ? "i" : "u";
  return std::string(dtype == DType::Bool ? "|" : "<") + kind + std::to_string(dtype_size(dtype));
}

// A device result: kiln's memory, exported through the CUDA Array Interface.
struct CudaArray {
  Array array;
  int64_t stream = 0;  // the stream the work that writes it was queued on
};

// DLPack's device type for CUDA memory (kDLCUDA).
constexpr int kDLPackCuda = 2;

std::optional<DType> dtype_from_dlpack(nb::dlpack::dtype type) {
  if (type.lanes != 1) return std::nullopt;
  using Code = nb::dlpack::dtype_code;
  const int bits = type.bits;
  switch (static_cast<Code>(type.code)) {
    case Code::Bool: return bits == 8 ? std::optional(DType::Bool) : std::nullopt;
    case Code::Int:
      return bits == 8 ? DType::Int8 : bits == 16 ? DType::Int16 : bits == 32 ? DType::Int32
             : bits == 64 ? std::optional(DType::Int64) : std::nullopt;
    case Code::UInt:
      return bits == 8 ? DType::UInt8 : bits == 16 ? DType::UInt16 : bits == 32 ? DType::UInt32
             : bits == 64 ? std::optional(DType::UInt64) : std::nullopt;
    case Code::Float:
      return bits == 16 ? DType::Float16 : bits == 32 ? DType::Float32
             : bits == 64 ? std::optional(DType::Float64) : std::nullopt;
    case Code::Bfloat: return bits == 16 ? std::optional(DType::BFloat16) : std::nullopt;
    case Code::Complex:
      return bits == 64 ? DType::Complex64 : bits == 128 ? std::optional(DType::Complex128)
                                                          : std::nullopt;
    default: return std::nullopt;
  }
}

nb::dlpack::dtype dlpack_dtype(DType dtype) {
  using Code = nb::dlpack::dtype_code;
  Code code = dtype == DType::Bool           ? Code::Bool
              : dtype == DType::BFloat16     ? Code::Bfloat
              : is_complex(dtype)            ? Code::Complex
              : is_float(dtype)              ? Code::Float
              : is_signed_integer(dtype)     ? Code::Int
                                             : Code::UInt;
  return {static_cast<uint8_t>(code), static_cast<uint8_t>(dtype_size(dtype) * 8), 1};
}

// An object whose __dlpack_device__ is a CUDA device.
bool on_dlpack_cuda_device(nb::handle object) {
  if (!nb::hasattr(object, "__dlpack_device__") || !nb::hasattr(object, "__dlpack__"))
    return false;
  nb::tuple device = nb::borrow<nb::tuple>(object.attr("__dlpack_device__")());
  return device.size() == 2 && nb::cast<int>(device[0]) == kDLPackCuda;
}

// DLPack's number of the stream kiln's work on `stream` is queued on (1: the legacy default).
int64_t dlpack_stream(int64_t stream) { return stream == 0 ? 1 : stream; }

// A DLPack export as a borrowed device Array that keeps the export (and so the producer's
// memory) alive. Given the stream kiln reads it on (`reader_stream` >= 0), the producer
// orders its data's writes before that stream's later work (JAX queues a wait there); else it
// makes the data ready before the export returns (__dlpack__ without a stream waits on the
// host). A producer that takes no stream argument is asked again without one.
Array borrow_dlpack_array(nb::handle object, const std::string& where, int64_t reader_stream) {
  auto export_ = std::make_shared<nb::ndarray<>>();
  nb::object exported = nb::borrow(object);
  if (reader_stream >= 0) {
    try {
      exported = object.attr("__dlpack__")(nb::arg("stream") = dlpack_stream(reader_stream));
    } catch (nb::python_error& error) {
      if (!error.matches(PyExc_TypeError)) throw;
    }
  }
  if (!nb::try_cast(exported, *export_))
    throw Error(ErrorKind::Type, error_message("run", "", where + " could not be read by DLPack"));
  std::optional<DType> dtype = dtype_from_dlpack(export_->dtype());
  if (!dtype)
    throw Error(ErrorKind::Type, error_message("run", "", where + " has a dtype kiln cannot read"));
  std::vector<int64_t> shape, strides;
  for (size_t d = 0; d < export_->ndim(); ++d) {
    shape.push_back(static_cast<int64_t>(export_->shape(d)));
    strides.push_back(export_->stride(d));
  }
  void* pointer = export_->data();
  if (pointer != nullptr && !runtime::cuda::is_device_pointer(pointer))
    throw Error(ErrorKind::Value, error_message("run", "", where + " is not CUDA device memory"));
  // The last reference may go on a thread without the GIL (a run releases it).
  std::shared_ptr<void> owner(new std::shared_ptr<nb::ndarray<>>(std::move(export_)),
                              [](void* kept) {
                                GilHeld gil;
                                delete static_cast<std::shared_ptr<nb::ndarray<>>*>(kept);
                              });
  return Array::borrow(pointer, *dtype, shape, strides, std::move(owner), Device::Cuda);
}

nb::dict interface_of(const CudaArray& a) {
  nb::list shape;
  for (int64_t extent : a.array.shape()) shape.append(extent);
  nb::dict interface;
  interface["shape"] = nb::tuple(shape);
  interface["typestr"] = typestr_of(a.array.dtype());
  interface["data"] = nb::make_tuple(reinterpret_cast<uintptr_t>(a.array.data()), false);
  interface["strides"] = nb::none();  // kiln's results are contiguous
  interface["version"] = 3;
  // 0 means "no stream" to consumers; the legacy default stream is 1 there.
  interface["stream"] = a.stream == 0 ? nb::int_(1) : nb::int_(a.stream);
  return interface;
}

}  // namespace

std::optional<Array> borrow_cuda_array(nb::handle object, size_t position, bool* by_dlpack,
                                       int64_t reader_stream) {
  auto where = [&] { return "input " + std::to_string(position) + " (a device array)"; };
  if (!nb::hasattr(object, "__cuda_array_interface__")) {
    if (!on_dlpack_cuda_device(object)) return std::nullopt;
    if (by_dlpack != nullptr) *by_dlpack = true;
    return borrow_dlpack_array(object, where(), reader_stream);
  }
  nb::dict interface = nb::borrow<nb::dict>(object.attr("__cuda_array_interface__"));
  std::optional<DType> dtype = dtype_from_typestr(nb::cast<std::string>(interface["typestr"]));
  if (!dtype)
    throw Error(ErrorKind::Type, error_message("run", "", where() + " has a dtype kiln cannot read: " +
                                                              nb::cast<std::string>(interface["typestr"])));
  std::vector<int64_t> shape = nb::cast<std::vector<int64_t>>(interface["shape"]);
  std::vector<int64_t> strides;
  if (interface.contains("strides") && !interface["strides"].is_none()) {
    for (int64_t bytes : nb::cast<std::vector<int64_t>>(interface["strides"])) {
      if (bytes % dtype_size(*dtype) != 0)
        throw Error(ErrorKind::Value, error_message("run", "", where() + " has strides that are not "
                                                                          "a multiple of its element size"));
      strides.push_back(bytes / dtype_size(*dtype));
    }
  }
  auto data = nb::cast<nb::tuple>(interface["data"]);
  void* pointer = reinterpret_cast<void*>(nb::cast<uintptr_t>(data[0]));
  if (pointer != nullptr && !runtime::cuda::is_device_pointer(pointer))
    throw Error(ErrorKind::Value, error_message("run", "", where() + " is not CUDA device memory"));
  return Array::borrow(pointer, *dtype, shape, strides, nullptr, Device::Cuda);
}

nb::object wrap_cuda_array(Array array, int64_t stream) {
  return nb::cast(CudaArray{std::move(array), stream});
}

namespace {

// DLPack inputs of runs the GPU may still be reading, each run's kept until an event after its
// work is done: their producer (JAX) may reuse an array's memory once its export is released.
// Never destroyed (its arrays' owners need the interpreter); emptied before the interpreter
// finalizes (an atexit hook registered at the first run, after the producer's library was
// imported, so that it runs before that library's own hooks).
struct ParkedInputs {
  std::unique_ptr<runtime::cuda::Event> done;
  std::vector<Array> inputs;
};
std::deque<ParkedInputs>& parked_inputs() {
  static auto* parked = new std::deque<ParkedInputs>();
  return *parked;
}
constexpr size_t kMostParkedRuns = 256;  // then a run waits for the oldest

// The oldest parked run's inputs released once its work is done, the host waiting for it
// without the GIL; taken off the list first (another thread may use the list meanwhile).
void wait_for_oldest(std::deque<ParkedInputs>& parked) {
  ParkedInputs oldest = std::move(parked.front());
  parked.pop_front();
  GilReleased released;
  oldest.done->wait();
  // `released` goes first (locals in reverse order): the inputs are released with the GIL
}

void release_parked_inputs(bool wait) {
  std::deque<ParkedInputs>& parked = parked_inputs();
  while (!parked.empty()) {
    if (parked.front().done->done())
      parked.pop_front();
    else if (wait)
      wait_for_oldest(parked);
    else
      return;
  }
}

}  // namespace

void keep_until_read(std::vector<Array> inputs, int64_t stream) {
  static bool hooked = false;
  if (!hooked) {
    nb::module_::import_("atexit").attr("register")(
        nb::cpp_function([] { release_parked_inputs(true); }));
    hooked = true;
  }
  release_parked_inputs(false);
  std::deque<ParkedInputs>& parked = parked_inputs();
  if (parked.size() >= kMostParkedRuns) wait_for_oldest(parked);
  ParkedInputs run{std::make_unique<runtime::cuda::Event>(), std::move(inputs)};
  run.done->record(reinterpret_cast<void*>(stream));
  parked.push_back(std::move(run));
}

void bind_cuda(nb::module_& module) {
  module.def(
      "device_array_layout",
      [](nb::handle object) -> nb::object {
        std::optional<Array> array = borrow_cuda_array(object, 0);
        if (!array) return nb::none();
        std::vector<int64_t> strides;
        if (!array->is_contiguous()) strides = array->strides();
        return nb::make_tuple(std::string(dtype_name(array->dtype())), array->shape(), strides);
      },
      nb::arg("array"),
      "(dtype name, shape, element strides or [] when contiguous) of a device array "
      "(__cuda_array_interface__ or DLPack on CUDA); None for anything else.");
  nb::class_<CudaArray>(module, "CudaArray",
                        "A kiln result in GPU memory, exported by the CUDA Array Interface "
                        "(torch.as_tensor(a, device='cuda'), cupy.asarray(a): no copy).")
      .def_prop_ro("__cuda_array_interface__", &interface_of)
      .def("__dlpack_device__",
           [](const CudaArray&) { return nb::make_tuple(kDLPackCuda, runtime::cuda::device().ordinal); })
      .def(
          "__dlpack__",
          [](nb::handle self, nb::kwargs options) {
            // The consumer reads on the stream it names (DLPack: 1 the legacy default, 2 the
            // per-thread one, -1 no ordering asked for): that stream waits for the work that
            // writes the array (JAX passes its stream); none named: the host waits for it.
            const CudaArray& a = nb::cast<const CudaArray&>(self);
            nb::object stream = options.contains("stream") ? options["stream"] : nb::none();
            if (stream.is_none()) {
              runtime::cuda::synchronize(reinterpret_cast<void*>(a.stream));
            } else if (const int64_t reader = nb::cast<int64_t>(stream);
                       reader != -1 && reader != dlpack_stream(a.stream)) {
              runtime::cuda::Event written;
              written.record(reinterpret_cast<void*>(a.stream));
              written.queue_wait(reinterpret_cast<void*>(reader));
            }
            std::vector<size_t> shape(a.array.shape().begin(), a.array.shape().end());
            nb::ndarray<nb::array_api> view(a.array.data(), shape.size(), shape.data(), self,
                                            nullptr, dlpack_dtype(a.array.dtype()),
                                            nb::device::cuda::value,
                                            runtime::cuda::device().ordinal);
            return nb::cast(view).attr("__dlpack__")(**options);
          },
          nb::arg("options"),
          "The array by DLPack (jax.dlpack.from_dlpack(a), torch.from_dlpack(a)): no copy.")
      .def(
          "get",
          [](const CudaArray& a) {
            runtime::cuda::synchronize(reinterpret_cast<void*>(a.stream));
            PyObject* host = to_numpy(a.array.to(Device::Cpu));
            if (host == nullptr) throw nb::python_error();
            return nb::steal(host);
          },
          "A NumPy copy on the host (as CuPy's get()), once the work writing it is done.")
      .def(
          "__array__",
          [](nb::handle self, nb::args, nb::kwargs) { return self.attr("get")(); },
          "np.asarray(a): get().")
      .def_prop_ro("shape", [](const CudaArray& a) { return a.array.shape(); })
      .def_prop_ro("dtype", [](const CudaArray& a) { return std::string(dtype_name(a.array.dtype())); })
      .def("__repr__", [](const CudaArray& a) {
        std::string shape;
        for (int64_t extent : a.array.shape()) shape += (shape.empty() ? "" : ", ") + std::to_string(extent);
        return "kiln.CudaArray(" + std::string(dtype_name(a.array.dtype())) + "[" + shape + "])";
      });
}

}  // namespace kiln::python
