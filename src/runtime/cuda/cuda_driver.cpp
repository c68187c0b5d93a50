#include "runtime/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "kiln/error.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/library_loading.h"

namespace kiln::runtime::cuda {

using namespace detail;

namespace {

constexpr const char* kDriverLibrary = "libcuda.so.1";

// What the first use found; never destroyed (arrays and modules may outlive other statics).
struct DriverState {
  DriverApi api{};
  std::string unavailable_reason;  // empty when usable
  CUdevice device = 0;
  DeviceInfo info;
};

// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", through `api`'s error functions
// (loading calls this before driver_state() is set).
std::string describe_with(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(result, &name) != kSuccess) {
    name = nullptr;
  }
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(result, &text) != kSuccess) {
    text = nullptr;
  }
  std::string description = name ? name : "CUDA error " + std::to_string(result);
  if (text != nullptr) description += std::string(" (") + text + ")";
  return description;
}

// Resolves `symbol` into `function`; on failure records the reason and returns false.
template <typename Function>
bool resolve(void* library, const char* symbol, Function& function, std::string& reason) {
  function = reinterpret_cast<Function>(dlsym(library, symbol));
  if (function != nullptr) return true;
  reason = std::string(kDriverLibrary) + " lacks " + symbol + " (the NVIDIA driver is too old)";
  return false;
}

bool resolve_all(void* library, DriverApi& api, std::string& reason) {
  return resolve(library, "cuInit", api.cuInit, reason) &&
         resolve(library, "cuDriverGetVersion", api.cuDriverGetVersion, reason) &&
         resolve(library, "cuGetErrorName", api.cuGetErrorName, reason) &&
         resolve(library, "cuGetErrorString", api.cuGetErrorString, reason) &&
         resolve(library, "cuDeviceGetCount", api.cuDeviceGetCount, reason) &&
         resolve(library, "cuDeviceGet", api.cuDeviceGet, reason) &&
         resolve(library, "cuDeviceGetName", api.cuDeviceGetName, reason) &&
         resolve(library, "cuDeviceGetAttribute", api.cuDeviceGetAttribute, reason) &&
         resolve(library, "cuDeviceTotalMem_v2", api.cuDeviceTotalMem, reason) &&
         resolve(library, "cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain, reason) &&
         resolve(library, "cuCtxGetCurrent", api.cuCtxGetCurrent, reason) &&
         resolve(library, "cuCtxSetCurrent", api.cuCtxSetCurrent, reason) &&
         resolve(library, "cuModuleLoadData", api.cuModuleLoadData, reason) &&
         resolve(library, "cuModuleUnload", api.cuModuleUnload, reason) &&
         resolve(library, "cuModuleGetFunction", api.cuModuleGetFunction, reason) &&
         resolve(library, "cuFuncSetAttribute", api.cuFuncSetAttribute, reason) &&
         resolve(library, "cuLaunchKernel", api.cuLaunchKernel, reason) &&
         resolve(library, "cuMemGetInfo_v2", api.cuMemGetInfo, reason) &&
         resolve(library, "cuMemAlloc_v2", api.cuMemAlloc, reason) &&
         resolve(library, "cuMemFree_v2", api.cuMemFree, reason) &&
         resolve(library, "cuMemcpyHtoD_v2", api.cuMemcpyHtoD, reason) &&
         resolve(library, "cuMemcpyDtoH_v2", api.cuMemcpyDtoH, reason) &&
         resolve(library, "cuMemcpyHtoDAsync_v2", api.cuMemcpyHtoDAsync, reason) &&
         resolve(library, "cuMemcpyDtoHAsync_v2", api.cuMemcpyDtoHAsync, reason) &&
         resolve(library, "cuMemcpyDtoDAsync_v2", api.cuMemcpyDtoDAsync, reason) &&
         resolve(library, "cuMemsetD8Async", api.cuMemsetD8Async, reason) &&
         resolve(library, "cuMemsetD32Async", api.cuMemsetD32Async, reason) &&
         resolve(library, "cuStreamSynchronize", api.cuStreamSynchronize, reason) &&
         resolve(library, "cuEventCreate", api.cuEventCreate, reason) &&
         resolve(library, "cuEventDestroy_v2", api.cuEventDestroy, reason) &&
         resolve(library, "cuEventRecord", api.cuEventRecord, reason) &&
         resolve(library, "cuEventSynchronize", api.cuEventSynchronize, reason) &&
         resolve(library, "cuEventQuery", api.cuEventQuery, reason) &&
         resolve(library, "cuStreamWaitEvent", api.cuStreamWaitEvent, reason) &&
         // The unversioned symbol: every driver has it (CUDA 13's header maps the name to _v2,
         // which drivers before 12.8 lack; both measure the same thing).
         resolve(library, "cuEventElapsedTime", api.cuEventElapsedTime, reason) &&
         resolve(library, "cuPointerGetAttribute", api.cuPointerGetAttribute, reason) &&
         resolve(library, "cuStreamCreate", api.cuStreamCreate, reason) &&
         resolve(library, "cuMemAllocHost_v2", api.cuMemAllocHost, reason) &&
         resolve(library, "cuMemFreeHost", api.cuMemFreeHost, reason) &&
         resolve(library, "cuStreamBeginCapture_v2", api.cuStreamBeginCapture, reason) &&
         resolve(library, "cuStreamEndCapture", api.cuStreamEndCapture, reason) &&
         resolve(library, "cuGraphInstantiateWithFlags", api.cuGraphInstantiateWithFlags, reason) &&
         resolve(library, "cuGraphLaunch", api.cuGraphLaunch, reason) &&
         resolve(library, "cuGraphExecDestroy", api.cuGraphExecDestroy, reason) &&
         resolve(library, "cuGraphDestroy", api.cuGraphDestroy, reason);
}

// The ordinal from $KILN_CUDA_DEVICE (0 when unset); -1 when it is not a number.
int requested_ordinal() {
  const char* text = std::getenv("KILN_CUDA_DEVICE");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > 1 << 16) return -1;
  return static_cast<int>(value);
}

// Fills state.device and state.info; returns the reason when a query fails.
std::string query_device(DriverState& state, int count) {
  const DriverApi& api = state.api;
  int ordinal = requested_ordinal();
  if (ordinal < 0 || ordinal >= count) {
    const char* text = std::getenv("KILN_CUDA_DEVICE");
    return "KILN_CUDA_DEVICE=\"" + std::string(text ? text : "") +
           "\" names no device (this machine has " + std::to_string(count) + ")";
  }
  CUresult result = api.cuDeviceGet(&state.device, ordinal);
  if (result != kSuccess) return "cuDeviceGet failed: " + describe_with(api, result);
  DeviceInfo& info = state.info;
  info.ordinal = ordinal;
  char name[256] = {};
  result = api.cuDeviceGetName(name, sizeof(name) - 1, state.device);
  if (result != kSuccess) return "cuDeviceGetName failed: " + describe_with(api, result);
  info.name = name;
  std::string failure;  // the first attribute query that failed
  auto attribute = [&](int which, const char* what) {
    int value = 0;
    CUresult status = api.cuDeviceGetAttribute(&value, which, state.device);
    if (status != kSuccess && failure.empty()) {
      failure = std::string("cuDeviceGetAttribute(") + what +
                ") failed: " + describe_with(api, status);
    }
    return value;
  };
  int major = attribute(kAttributeCapabilityMajor, "COMPUTE_CAPABILITY_MAJOR");
  int minor = attribute(kAttributeCapabilityMinor, "COMPUTE_CAPABILITY_MINOR");
  info.architecture = major * 10 + minor;
  info.multiprocessors = attribute(kAttributeMultiprocessors, "MULTIPROCESSOR_COUNT");
  info.shared_memory_per_block =
      attribute(kAttributeMaxSharedPerBlock, "MAX_SHARED_MEMORY_PER_BLOCK");
  info.shared_memory_per_block_optin =
      attribute(kAttributeMaxSharedPerBlockOptin, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN");
  info.max_threads_per_block = attribute(kAttributeMaxThreadsPerBlock, "MAX_THREADS_PER_BLOCK");
  info.warp_size = attribute(kAttributeWarpSize, "WARP_SIZE");
  if (!failure.empty()) return failure;
  size_t total = 0;
  result = api.cuDeviceTotalMem(&total, state.device);
  if (result != kSuccess) return "cuDeviceTotalMem failed: " + describe_with(api, result);
  info.total_memory = static_cast<int64_t>(total);
  result = api.cuDriverGetVersion(&info.driver_version);
  if (result != kSuccess) return "cuDriverGetVersion failed: " + describe_with(api, result);
  return "";
}

// dlopen, cuInit, the device query. Never throws: a failure becomes unavailable_reason.
void load_driver(DriverState& state) {
  // Never dlclose'd: the driver stays loaded for the life of the process.
  void* library = open_library(kDriverLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* message = dlerror();
    state.unavailable_reason = std::string(kDriverLibrary) + " not found (no NVIDIA driver)";
    // dlerror() adds something only when the file exists but does not load (a broken install).
    if (message && !std::strstr(message, "No such file")) {
      state.unavailable_reason += std::string(": ") + message;
    }
    return;
  }
  if (!resolve_all(library, state.api, state.unavailable_reason)) return;
  CUresult result = state.api.cuInit(0);
  if (result != kSuccess) {
    state.unavailable_reason = "cuInit failed: " + describe_with(state.api, result);
    return;
  }
  int count = 0;
  result = state.api.cuDeviceGetCount(&count);
  if (result != kSuccess) {
    state.unavailable_reason = "cuDeviceGetCount failed: " + describe_with(state.api, result);
    return;
  }
  if (count <= 0) {
    state.unavailable_reason = "the NVIDIA driver sees no CUDA device";
    return;
  }
  state.unavailable_reason = query_device(state, count);
  // Optional: where it is missing, write_int64 falls back on two memsets.
  int memory_operations = 0;
  if (state.api.cuDeviceGetAttribute(&memory_operations, kAttribute64BitStreamMemOps,
                                     state.device) == kSuccess &&
      memory_operations != 0)
    state.api.cuStreamWriteValue64 = reinterpret_cast<decltype(state.api.cuStreamWriteValue64)>(
        dlsym(library, "cuStreamWriteValue64_v2"));
}

const DriverState& driver_state() {
  static std::once_flag once;
  static DriverState* state = nullptr;
  std::call_once(once, [] {
    auto* loaded = new DriverState;
    try {
      load_driver(*loaded);
    } catch (...) {  // std::bad_alloc from a string: still never throw from available()
      loaded->unavailable_reason = "loading the CUDA driver failed";
    }
    state = loaded;
  });
  return *state;
}

const DriverState& usable_driver_state() {
  const DriverState& state = driver_state();
  if (!state.unavailable_reason.empty()) {
    throw Error(ErrorKind::Unsupported,
                "kiln: device=\"cuda\" needs an NVIDIA GPU and its driver: " +
                    state.unavailable_reason);
  }
  return state;
}

// The device's primary context, retained on first use (under its own once flag: creating it
// takes a while and some memory, which available() and device() should not cost).
CUcontext primary_context() {
  static std::once_flag once;
  static CUcontext context = nullptr;
  std::call_once(once, [] {
    const DriverState& state = usable_driver_state();
    CUcontext retained = nullptr;
    check(state.api.cuDevicePrimaryCtxRetain(&retained, state.device),
          "cuDevicePrimaryCtxRetain");  // a throw leaves the flag unset: the next call retries
    context = retained;
  });
  return context;
}

// An event destroyed when it goes out of scope.
class ScopedEvent {
 public:
  ScopedEvent() { check(driver().cuEventCreate(&event_, kEventDefault), "cuEventCreate"); }
  ~ScopedEvent() { driver().cuEventDestroy(event_); }  // nothing to do about a failure here
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;
  CUevent get() const { return event_; }

 private:
  CUevent event_ = nullptr;
};

void check_size(int64_t bytes, const char* what) {
  if (bytes < 0) {
    throw Error(ErrorKind::Value, std::string("kiln: ") + what + " of a negative size (" +
                                      std::to_string(bytes) + " bytes)");
  }
}

std::string describe_dims(Dim3 dims) {
  return std::to_string(dims.x) + "x" + std::to_string(dims.y) + "x" + std::to_string(dims.z);
}

}  // namespace

namespace detail {

const DriverApi& driver() { return usable_driver_state().api; }

std::string describe(CUresult result) { return describe_with(driver_state().api, result); }

void check(CUresult result, const std::string& call) {
  if (result == kSuccess) return;
  throw Error(ErrorKind::Internal, "kiln: " + call + " failed: " + describe(result));
}

}  // namespace detail

bool available() { return driver_state().unavailable_reason.empty(); }

std::string unavailable_reason() { return driver_state().unavailable_reason; }

const DeviceInfo& device() { return usable_driver_state().info; }

void make_current() {
  const DriverApi& api = driver();
  CUcontext context = primary_context();
  CUcontext current = nullptr;
  check(api.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != context) check(api.cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

std::shared_ptr<Module> Module::load(const std::string& cubin) {
  make_current();
  CUmodule module = nullptr;
  CUresult result = driver().cuModuleLoadData(&module, cubin.data());
  if (result != kSuccess) {
    throw Error(ErrorKind::Internal,
                "kiln: cuModuleLoadData of a " + std::to_string(cubin.size()) +
                    "-byte cubin failed on " + device().name + " (driver " +
                    std::to_string(device().driver_version) + "): " + describe(result));
  }
  // The constructor is private, so std::make_shared cannot reach it.
  return std::shared_ptr<Module>(new Module(module));
}

Module::~Module() {
  // Errors are ignored: at process exit the driver may already be shut down.
  try {
    make_current();
    driver().cuModuleUnload(static_cast<CUmodule>(module_));
  } catch (...) {
  }
}

void* Module::find(const std::string& name) const {
  make_current();
  CUfunction function = nullptr;
  CUresult result =
      driver().cuModuleGetFunction(&function, static_cast<CUmodule>(module_), name.c_str());
  return result == kSuccess ? function : nullptr;
}

void* Module::function(const std::string& name) const {
  make_current();
  CUfunction function = nullptr;
  check(driver().cuModuleGetFunction(&function, static_cast<CUmodule>(module_), name.c_str()),
        "cuModuleGetFunction(\"" + name + "\")");
  return function;
}

void launch(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void* stream,
            void** params, const std::string& what) {
  // The messages are built only on failure: a model launches hundreds of kernels a call.
  auto configuration = [&] {
    return "grid " + describe_dims(grid) + ", block " + describe_dims(block) + ", " +
           std::to_string(shared_bytes) + " bytes of shared memory";
  };
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 ||
      block.z == 0) {
    throw Error(ErrorKind::Value, "kiln: launch of " + what + " with an empty " + configuration());
  }
  make_current();
  CUresult result = driver().cuLaunchKernel(static_cast<CUfunction>(function), grid.x, grid.y,
                                            grid.z, block.x, block.y, block.z, shared_bytes,
                                            static_cast<CUstream>(stream), params, nullptr);
  if (result != kSuccess) check(result, "cuLaunchKernel of " + what + " (" + configuration() + ")");
}

void set_max_dynamic_shared(void* function, int bytes) {
  const DeviceInfo& info = device();
  if (bytes < 0 || bytes > info.shared_memory_per_block_optin) {
    throw Error(ErrorKind::Value, "kiln: " + std::to_string(bytes) +
                                      " bytes of dynamic shared memory asked for; " + info.name +
                                      " allows at most " +
                                      std::to_string(info.shared_memory_per_block_optin));
  }
  make_current();
  check(driver().cuFuncSetAttribute(static_cast<CUfunction>(function), kFunctionMaxDynamicShared,
                                    bytes),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " + std::to_string(bytes) + ")");
}

void copy_to_device(void* device_dst, const void* host_src, int64_t bytes, void* stream) {
  check_size(bytes, "copy to the GPU");
  make_current();
  if (bytes == 0) return;
  const DriverApi& api = driver();
  if (stream == nullptr) {
    check(api.cuMemcpyHtoD(device_address(device_dst), host_src, bytes), "cuMemcpyHtoD");
  } else {
    check(api.cuMemcpyHtoDAsync(device_address(device_dst), host_src, bytes,
                                static_cast<CUstream>(stream)),
          "cuMemcpyHtoDAsync");
  }
}

void copy_to_host_async(void* host_dst, const void* device_src, int64_t bytes, void* stream) {
  check_size(bytes, "copy from the GPU");
  make_current();
  if (bytes == 0) return;
  check(driver().cuMemcpyDtoHAsync(host_dst, device_address(device_src), bytes,
                                   static_cast<CUstream>(stream)),
        "cuMemcpyDtoHAsync");
}

void copy_to_host(void* host_dst, const void* device_src, int64_t bytes, void* stream) {
  check_size(bytes, "copy from the GPU");
  make_current();
  if (bytes == 0) return;
  const DriverApi& api = driver();
  if (stream == nullptr) {
    check(api.cuMemcpyDtoH(host_dst, device_address(device_src), bytes), "cuMemcpyDtoH");
  } else {
    check(api.cuMemcpyDtoHAsync(host_dst, device_address(device_src), bytes,
                                static_cast<CUstream>(stream)),
          "cuMemcpyDtoHAsync");
    check(api.cuStreamSynchronize(static_cast<CUstream>(stream)), "cuStreamSynchronize");
  }
}

void copy_device_to_device(void* device_dst, const void* device_src, int64_t bytes,
                           void* stream) {
  check_size(bytes, "copy on the GPU");
  make_current();
  if (bytes == 0) return;
  // Queued on the stream (null: the legacy default one, torch's usual) and never waited for:
  // CUDA documents the plain cuMemcpyDtoD as synchronous "for most use cases", and with it a
  // reduce-overhead replay's staged input (a training step's new batch) cost resnet18's step
  // on an H200 ~0.5 ms of host time waiting for the GPU (4.76 -> 4.05 ms a synced step).
  check(driver().cuMemcpyDtoDAsync(device_address(device_dst), device_address(device_src), bytes,
                                   static_cast<CUstream>(stream)),
        "cuMemcpyDtoDAsync");
}

void memset_zero(void* device_dst, int64_t bytes, void* stream) {
  check_size(bytes, "memset on the GPU");
  make_current();
  if (bytes == 0) return;
  check(driver().cuMemsetD8Async(device_address(device_dst), 0, bytes,
                                 static_cast<CUstream>(stream)),
        "cuMemsetD8Async");
}

void write_int64(void* device_dst, int64_t value, void* stream) {
  make_current();
  const uint64_t bits = static_cast<uint64_t>(value);  // little-endian: the low word first
  const CUdeviceptr at = device_address(device_dst);
  // One operation the GPU's front end performs, ordered after the stream's earlier work: a host
  // loop writes its index each iteration, and two memset kernels cost ~1.6 us of GPU time.
  if (driver().cuStreamWriteValue64 != nullptr) {
    check(driver().cuStreamWriteValue64(static_cast<CUstream>(stream), at, bits,
                                        kStreamWriteValueDefault),
          "cuStreamWriteValue64");
    return;
  }
  check(driver().cuMemsetD32Async(at, static_cast<unsigned>(bits), 1, static_cast<CUstream>(stream)),
        "cuMemsetD32Async");
  check(driver().cuMemsetD32Async(at + 4, static_cast<unsigned>(bits >> 32), 1,
                                  static_cast<CUstream>(stream)),
        "cuMemsetD32Async");
}

void synchronize(void* stream) {
  make_current();
  check(driver().cuStreamSynchronize(static_cast<CUstream>(stream)), "cuStreamSynchronize");
}

double time_ms(void* stream, const std::function<void()>& work) {
  make_current();
  const DriverApi& api = driver();
  ScopedEvent start, stop;
  check(api.cuEventRecord(start.get(), static_cast<CUstream>(stream)), "cuEventRecord");
  work();
  check(api.cuEventRecord(stop.get(), static_cast<CUstream>(stream)), "cuEventRecord");
  check(api.cuEventSynchronize(stop.get()), "cuEventSynchronize");
  float milliseconds = 0;
  check(api.cuEventElapsedTime(&milliseconds, start.get(), stop.get()), "cuEventElapsedTime");
  return milliseconds;
}

namespace {
// The stream graphs are captured on: kiln's own, one per thread (the legacy default stream,
// torch's usual current stream, cannot be captured).
CUstream capture_stream() {
  thread_local CUstream stream = nullptr;
  if (stream == nullptr) check(driver().cuStreamCreate(&stream, kStreamNonBlocking), "cuStreamCreate");
  return stream;
}
}  // namespace

std::shared_ptr<Graph> Graph::capture(const std::function<void(void*)>& work) {
  make_current();
  const DriverApi& api = driver();
  CUstream stream = capture_stream();
  check(api.cuStreamBeginCapture(stream, kCaptureModeRelaxed), "cuStreamBeginCapture");
  CUgraph graph = nullptr;
  try {
    work(stream);
  } catch (...) {
    api.cuStreamEndCapture(stream, &graph);  // ends the capture; the partial graph is dropped
    if (graph != nullptr) api.cuGraphDestroy(graph);
    throw;
  }
  check(api.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  CUresult result = api.cuGraphInstantiateWithFlags(&exec, graph, 0);
  api.cuGraphDestroy(graph);
  check(result, "cuGraphInstantiateWithFlags");
  return std::shared_ptr<Graph>(new Graph(exec));
}

Graph::~Graph() {
  if (available()) driver().cuGraphExecDestroy(static_cast<CUgraphExec>(exec_));
}

void Graph::launch(void* stream) {
  make_current();
  check(driver().cuGraphLaunch(static_cast<CUgraphExec>(exec_), static_cast<CUstream>(stream)),
        "cuGraphLaunch");
}

std::shared_ptr<void> allocate_pinned(int64_t bytes) {
  make_current();
  void* pointer = nullptr;
  check(driver().cuMemAllocHost(&pointer, static_cast<size_t>(std::max<int64_t>(bytes, 1))),
        "cuMemAllocHost");
  return std::shared_ptr<void>(pointer, [](void* p) {
    if (available()) driver().cuMemFreeHost(p);
  });
}

Event::Event(bool timing) {
  make_current();
  CUevent event = nullptr;
  check(driver().cuEventCreate(&event, timing ? kEventDefault : kEventDisableTiming),
        "cuEventCreate");
  event_ = event;
}

Event::~Event() {
  if (available()) driver().cuEventDestroy(static_cast<CUevent>(event_));
}

void Event::record(void* stream) {
  check(driver().cuEventRecord(static_cast<CUevent>(event_), static_cast<CUstream>(stream)),
        "cuEventRecord");
}

void Event::wait() {
  check(driver().cuEventSynchronize(static_cast<CUevent>(event_)), "cuEventSynchronize");
}

void Event::queue_wait(void* stream) {
  check(driver().cuStreamWaitEvent(static_cast<CUstream>(stream), static_cast<CUevent>(event_), 0),
        "cuStreamWaitEvent");
}

bool Event::done() {
  CUresult status = driver().cuEventQuery(static_cast<CUevent>(event_));
  if (status == kNotReady) return false;
  check(status, "cuEventQuery");
  return true;
}

double Event::seconds_between(const Event& start, const Event& end) {
  float milliseconds = 0;
  check(driver().cuEventElapsedTime(&milliseconds, static_cast<CUevent>(start.event_),
                                    static_cast<CUevent>(end.event_)),
        "cuEventElapsedTime");
  return milliseconds * 1e-3;
}

bool is_device_pointer(const void* pointer) {
  if (pointer == nullptr || !available()) return false;
  try {
    make_current();
  } catch (const Error&) {
    return false;
  }
  unsigned memory_type = 0;
  CUresult result =
      driver().cuPointerGetAttribute(&memory_type, kPointerMemoryType, device_address(pointer));
  return result == kSuccess && memory_type == kMemoryTypeDevice;
}

}  // namespace kiln::runtime::cuda
