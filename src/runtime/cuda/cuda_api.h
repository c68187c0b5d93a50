// The part of the CUDA driver API kiln calls, declared by hand (no CUDA header: the library is
// opened with dlopen, see cuda_driver.h), and the helpers the driver layer's .cpp files share.
// Internal to src/runtime/cuda/.
#pragma once
#include <cstddef>
#include <string>

namespace kiln::runtime::cuda::detail {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

// Constants of cuda.h, each with its CUDA name.
constexpr CUresult kSuccess = 0;      // CUDA_SUCCESS
constexpr CUresult kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY
constexpr CUresult kNotReady = 600;   // CUDA_ERROR_NOT_READY: cuEventQuery's "not yet"
// CUdevice_attribute values, CU_DEVICE_ATTRIBUTE_...
constexpr int kAttributeMaxThreadsPerBlock = 1;       // MAX_THREADS_PER_BLOCK
constexpr int kAttributeMaxSharedPerBlock = 8;        // MAX_SHARED_MEMORY_PER_BLOCK
constexpr int kAttributeWarpSize = 10;                // WARP_SIZE
constexpr int kAttributeMultiprocessors = 16;         // MULTIPROCESSOR_COUNT
constexpr int kAttributeCapabilityMajor = 75;         // COMPUTE_CAPABILITY_MAJOR
constexpr int kAttributeCapabilityMinor = 76;         // COMPUTE_CAPABILITY_MINOR
constexpr int kAttributeMaxSharedPerBlockOptin = 97;  // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
constexpr int kAttribute64BitStreamMemOps = 122;     // CAN_USE_64_BIT_STREAM_MEM_OPS
constexpr int kFunctionMaxDynamicShared = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int kPointerMemoryType = 2;         // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr unsigned kMemoryTypeDevice = 2;     // CU_MEMORYTYPE_DEVICE
constexpr unsigned kEventDefault = 0;         // CU_EVENT_DEFAULT
constexpr unsigned kStreamWriteValueDefault = 0;  // CU_STREAM_WRITE_VALUE_DEFAULT
constexpr unsigned kStreamNonBlocking = 1;    // CU_STREAM_NON_BLOCKING
constexpr unsigned kEventDisableTiming = 2;   // CU_EVENT_DISABLE_TIMING
constexpr int kCaptureModeRelaxed = 2;        // CU_STREAM_CAPTURE_MODE_RELAXED

// The entry points, named as in cuda.h; each comment gives the exported symbol where cuda.h
// maps the name to a versioned one.
struct DriverApi {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuGetErrorName)(CUresult error, const char** name);
  CUresult (*cuGetErrorString)(CUresult error, const char** text);
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device);  // cuDeviceTotalMem_v2
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device);
  CUresult (*cuCtxGetCurrent)(CUcontext* context);
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name);
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute, int value);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y,
                             unsigned grid_z, unsigned block_x, unsigned block_y,
                             unsigned block_z, unsigned shared_bytes, CUstream stream,
                             void** params, void** extra);
  CUresult (*cuMemGetInfo)(size_t* free, size_t* total);             // cuMemGetInfo_v2
  CUresult (*cuMemAlloc)(CUdeviceptr* pointer, size_t bytes);         // cuMemAlloc_v2
  CUresult (*cuMemFree)(CUdeviceptr pointer);                         // cuMemFree_v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void* src, size_t bytes);  // _v2
  CUresult (*cuMemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes);        // _v2
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes,
                                CUstream stream);  // _v2
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes,
                                CUstream stream);  // _v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream stream);  // _v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count,
                              CUstream stream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned int value, size_t count,
                               CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  // Optional (null where the driver or the device lacks 64-bit stream memory operations).
  CUresult (*cuStreamWriteValue64)(CUstream stream, CUdeviceptr address, uint64_t value,
                                   unsigned flags);  // cuStreamWriteValue64_v2
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent event);  // cuEventDestroy_v2
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventQuery)(CUevent event);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
  CUresult (*cuEventElapsedTime)(float* milliseconds, CUevent start, CUevent end);
  CUresult (*cuPointerGetAttribute)(void* value, int attribute, CUdeviceptr pointer);
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags);
  CUresult (*cuMemAllocHost)(void** pointer, size_t bytes);  // cuMemAllocHost_v2
  CUresult (*cuMemFreeHost)(void* pointer);
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode);  // cuStreamBeginCapture_v2
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph* graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec* exec, CUgraph graph,
                                          unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);
};

// The loaded driver, after cuInit; throws the Unsupported error of cuda_driver.h when
// !available().
const DriverApi& driver();

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string describe(CUresult result);
// Throws Error(Internal, "kiln: <call> failed: <describe(result)>") unless result is success.
void check(CUresult result, const std::string& call);

inline CUdeviceptr device_address(const void* pointer) {
  return reinterpret_cast<CUdeviceptr>(pointer);
}

}  // namespace kiln::runtime::cuda::detail
