// Device arrays across the Python boundary, by the CUDA Array Interface (version 3: what torch
// CUDA tensors, CuPy arrays and Numba device arrays export): borrowed by pointer for a run on
// the GPU, and kiln's device results handed out the same way (kiln.CudaArray), with no copy.
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

std::optional<Array> borrow_cuda_array(nb::handle object, size_t position) {
  if (!nb::hasattr(object, "__cuda_array_interface__")) return std::nullopt;
  nb::dict interface = nb::borrow<nb::dict>(object.attr("__cuda_array_interface__"));
  auto where = [&] { return "input " + std::to_string(position) + " (a device array)"; };
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
  return Array::borrow(pointer, *dtype, shape, strides);
}

nb::object wrap_cuda_array(Array array, int64_t stream) {
  return nb::cast(CudaArray{std::move(array), stream});
}

void bind_cuda(nb::module_& module) {
  nb::class_<CudaArray>(module, "CudaArray",
                        "A kiln result in GPU memory, exported by the CUDA Array Interface "
                        "(torch.as_tensor(a, device='cuda'), cupy.asarray(a): no copy).")
      .def_prop_ro("__cuda_array_interface__", &interface_of)
      .def_prop_ro("shape", [](const CudaArray& a) { return a.array.shape(); })
      .def_prop_ro("dtype", [](const CudaArray& a) { return std::string(dtype_name(a.array.dtype())); })
      .def("__repr__", [](const CudaArray& a) {
        std::string shape;
        for (int64_t extent : a.array.shape()) shape += (shape.empty() ? "" : ", ") + std::to_string(extent);
        return "kiln.CudaArray(" + std::string(dtype_name(a.array.dtype())) + "[" + shape + "])";
      });
}

}  // namespace kiln::python
