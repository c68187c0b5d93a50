#include "runtime/cuda/cuda_dnn.h"

#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kiln/error.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_libraries.h"

namespace kiln::runtime::cuda {
namespace {

// cudnn_graph.h / cudnn_cnn.h's types and constants, declared by hand (no CUDA header: see
// cuda_driver.h). The legacy convolution API, which cuDNN 9 keeps.
using cudnnStatus_t = int;
using Handle = struct cudnnContext*;
using TensorDesc = struct cudnnTensorStruct*;
using FilterDesc = struct cudnnFilterStruct*;
using ConvDesc = struct cudnnConvolutionStruct*;
constexpr cudnnStatus_t kDnnSuccess = 0;  // CUDNN_STATUS_SUCCESS
// cudnnDataType_t
constexpr int kFloat = 0, kDouble = 1, kHalf = 2, kBFloat16 = 9;
constexpr int kFormatNCHW = 0, kFormatNHWC = 1;  // cudnnTensorFormat_t
constexpr int kCrossCorrelation = 1;             // CUDNN_CROSS_CORRELATION
constexpr int kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3;  // cudnnMathType_t
constexpr int kMostAlgorithms = 16;

// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: one layout for all three.
struct AlgorithmPerf {
  int algorithm;
  cudnnStatus_t status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct DnnApi {
  size_t (*cudnnGetVersion)();
  const char* (*cudnnGetErrorString)(cudnnStatus_t status);
  cudnnStatus_t (*cudnnCreate)(Handle* handle);
  cudnnStatus_t (*cudnnSetStream)(Handle handle, void* stream);
  cudnnStatus_t (*cudnnCreateTensorDescriptor)(TensorDesc* desc);
  cudnnStatus_t (*cudnnSetTensorNdDescriptor)(TensorDesc desc, int type, int rank,
                                              const int* dims, const int* strides);
  cudnnStatus_t (*cudnnCreateFilterDescriptor)(FilterDesc* desc);
  cudnnStatus_t (*cudnnSetFilterNdDescriptor)(FilterDesc desc, int type, int format, int rank,
                                              const int* dims);
  cudnnStatus_t (*cudnnCreateConvolutionDescriptor)(ConvDesc* desc);
  cudnnStatus_t (*cudnnSetConvolutionNdDescriptor)(ConvDesc desc, int rank, const int* padding,
                                                   const int* strides, const int* dilation,
                                                   int mode, int compute_type);
  cudnnStatus_t (*cudnnSetConvolutionGroupCount)(ConvDesc desc, int groups);
  cudnnStatus_t (*cudnnSetConvolutionMathType)(ConvDesc desc, int math_type);
  cudnnStatus_t (*cudnnGetConvolutionForwardAlgorithm_v7)(Handle, TensorDesc x, FilterDesc w,
                                                          ConvDesc, TensorDesc y, int requested,
                                                          int* returned, AlgorithmPerf* perf);
  cudnnStatus_t (*cudnnGetConvolutionForwardWorkspaceSize)(Handle, TensorDesc x, FilterDesc w,
                                                           ConvDesc, TensorDesc y, int algorithm,
                                                           size_t* bytes);
  cudnnStatus_t (*cudnnConvolutionForward)(Handle, const void* alpha, TensorDesc x_desc,
                                           const void* x, FilterDesc w_desc, const void* w,
                                           ConvDesc, int algorithm, void* workspace,
                                           size_t workspace_bytes, const void* beta,
                                           TensorDesc y_desc, void* y);
  cudnnStatus_t (*cudnnAddTensor)(Handle, const void* alpha, TensorDesc a_desc, const void* a,
                                  const void* beta, TensorDesc c_desc, void* c);
  cudnnStatus_t (*cudnnTransformTensor)(Handle, const void* alpha, TensorDesc x_desc,
                                        const void* x, const void* beta, TensorDesc y_desc,
                                        void* y);
  cudnnStatus_t (*cudnnGetConvolutionBackwardDataAlgorithm_v7)(Handle, FilterDesc w,
                                                               TensorDesc dy, ConvDesc,
                                                               TensorDesc dx, int requested,
                                                               int* returned, AlgorithmPerf* perf);
  cudnnStatus_t (*cudnnGetConvolutionBackwardDataWorkspaceSize)(Handle, FilterDesc w,
                                                                TensorDesc dy, ConvDesc,
                                                                TensorDesc dx, int algorithm,
                                                                size_t* bytes);
  cudnnStatus_t (*cudnnConvolutionBackwardData)(Handle, const void* alpha, FilterDesc w_desc,
                                                const void* w, TensorDesc dy_desc,
                                                const void* dy, ConvDesc, int algorithm,
                                                void* workspace, size_t workspace_bytes,
                                                const void* beta, TensorDesc dx_desc, void* dx);
  cudnnStatus_t (*cudnnGetConvolutionBackwardFilterAlgorithm_v7)(Handle, TensorDesc x,
                                                                 TensorDesc dy, ConvDesc,
                                                                 FilterDesc dw, int requested,
                                                                 int* returned,
                                                                 AlgorithmPerf* perf);
  cudnnStatus_t (*cudnnGetConvolutionBackwardFilterWorkspaceSize)(Handle, TensorDesc x,
                                                                  TensorDesc dy, ConvDesc,
                                                                  FilterDesc dw, int algorithm,
                                                                  size_t* bytes);
  cudnnStatus_t (*cudnnConvolutionBackwardFilter)(Handle, const void* alpha, TensorDesc x_desc,
                                                  const void* x, TensorDesc dy_desc,
                                                  const void* dy, ConvDesc, int algorithm,
                                                  void* workspace, size_t workspace_bytes,
                                                  const void* beta, FilterDesc dw_desc,
                                                  void* dw);
};

struct DnnState {
  DnnApi api{};
  std::string unavailable_reason;
};

DnnApi* resolving = nullptr;  // the API the candidate check fills (under call_once)

#define KILN_RESOLVE(name) detail::resolve_symbol(library, #name, api.name, missing)
std::string accept_cudnn(void* library) {
  std::string missing;
  DnnApi& api = *resolving;
  bool ok = KILN_RESOLVE(cudnnGetVersion) && KILN_RESOLVE(cudnnGetErrorString) &&
            KILN_RESOLVE(cudnnCreate) && KILN_RESOLVE(cudnnSetStream) &&
            KILN_RESOLVE(cudnnCreateTensorDescriptor) && KILN_RESOLVE(cudnnSetTensorNdDescriptor) &&
            KILN_RESOLVE(cudnnCreateFilterDescriptor) && KILN_RESOLVE(cudnnSetFilterNdDescriptor) &&
            KILN_RESOLVE(cudnnCreateConvolutionDescriptor) &&
            KILN_RESOLVE(cudnnSetConvolutionNdDescriptor) &&
            KILN_RESOLVE(cudnnSetConvolutionGroupCount) &&
            KILN_RESOLVE(cudnnSetConvolutionMathType) &&
            KILN_RESOLVE(cudnnGetConvolutionForwardAlgorithm_v7) &&
            KILN_RESOLVE(cudnnGetConvolutionForwardWorkspaceSize) &&
            KILN_RESOLVE(cudnnConvolutionForward) && KILN_RESOLVE(cudnnAddTensor) &&
            KILN_RESOLVE(cudnnTransformTensor) &&
            KILN_RESOLVE(cudnnGetConvolutionBackwardDataAlgorithm_v7) &&
            KILN_RESOLVE(cudnnGetConvolutionBackwardDataWorkspaceSize) &&
            KILN_RESOLVE(cudnnConvolutionBackwardData) &&
            KILN_RESOLVE(cudnnGetConvolutionBackwardFilterAlgorithm_v7) &&
            KILN_RESOLVE(cudnnGetConvolutionBackwardFilterWorkspaceSize) &&
            KILN_RESOLVE(cudnnConvolutionBackwardFilter);
  return ok ? "" : "lacks " + missing;
}
#undef KILN_RESOLVE

const DnnApi& dnn() {
  static std::once_flag once;
  static DnnState* state = nullptr;  // never destroyed
  std::call_once(once, [] {
    auto* loaded = new DnnState;
    resolving = &loaded->api;
    std::string path, tried;
    if (detail::open_nvidia_library({"libcudnn.so.9"}, {"nvidia/cudnn/lib", "nvidia/cu13/lib"},
                                    path, tried, accept_cudnn) == nullptr)
      loaded->unavailable_reason =
          "kiln: convolution on device=\"cuda\" needs cuDNN 9, not found; tried " + tried +
          ". Install the pip package nvidia-cudnn-cu13 (torch's CUDA wheels bring it), and point "
          "$KILN_NVRTC_DIR (a library folder or site-packages) at it";
    state = loaded;
  });
  if (!state->unavailable_reason.empty())
    throw Error(ErrorKind::Unsupported, state->unavailable_reason);
  return state->api;
}

void check(cudnnStatus_t status, const char* call) {
  if (status == kDnnSuccess) return;
  const char* text = dnn().cudnnGetErrorString(status);
  throw Error(ErrorKind::Internal, std::string("kiln: ") + call + " failed: " +
                                       (text ? text : "cuDNN status " + std::to_string(status)));
}

Handle handle(void* stream) {  // one per thread, like cuBLAS's; the stream set when it changes
  thread_local Handle handle = nullptr;
  thread_local void* handle_stream = nullptr;
  make_current();
  if (handle == nullptr) {
    check(dnn().cudnnCreate(&handle), "cudnnCreate");
    handle_stream = reinterpret_cast<void*>(-1);
  }
  if (handle_stream != stream) {
    check(dnn().cudnnSetStream(handle, stream), "cudnnSetStream");
    handle_stream = stream;
  }
  return handle;
}

int data_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return kFloat;
    case DType::Float64: return kDouble;
    case DType::Float16: return kHalf;
    case DType::BFloat16: return kBFloat16;
    default: return -1;
  }
}

int narrow(int64_t value) {
  if (value < 0 || value > INT_MAX)
    throw Error(ErrorKind::Unsupported, "kiln: convolution on device=\"cuda\": extent or stride " +
                                            std::to_string(value) + " is beyond cuDNN's 32 bits");
  return static_cast<int>(value);
}

// cuDNN wants at least 4 dimensions: a 1-D convolution gets a trailing spatial extent of 1.
size_t dnn_rank(size_t rank) { return rank < 4 ? 4 : rank; }

std::vector<int> dims_of(const std::vector<int64_t>& shape) {
  std::vector<int> dims;
  for (int64_t extent : shape) dims.push_back(narrow(extent));
  dims.resize(dnn_rank(shape.size()), 1);
  return dims;
}

bool packed_in_order(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                     const std::vector<size_t>& order) {  // order: outermost first
  int64_t expected = 1;
  for (size_t i = order.size(); i-- > 0;) {
    size_t d = order[i];
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

// The order (outermost first) of a packed (N, C, *spatial) operand's dimensions in memory:
// channels-first as it is, channels-last (N, *spatial, C).
std::vector<size_t> layout_order(size_t rank, bool channels_last) {
  std::vector<size_t> order{0};
  if (!channels_last) order.push_back(1);
  for (size_t d = 2; d < rank; ++d) order.push_back(d);
  if (channels_last) order.push_back(1);
  return order;
}

bool packed_channels_last(const DnnTensor& t) {
  return packed_in_order(t.shape, t.strides, layout_order(t.shape.size(), true));
}

// The filter format of a weight (O, C, *kernel): NCHW if packed so, NHWC if packed (O, *kernel,
// C); -1 otherwise. A filter packed both ways (1x1, or one input channel) takes the layout of
// the input `x`: cuDNN has no algorithm for some mixes.
int filter_format(const DnnTensor& w, const DnnTensor& x) {
  const bool first = packed_in_order(w.shape, w.strides, layout_order(w.shape.size(), false));
  const bool last = packed_channels_last(w);
  if (first && last) return packed_channels_last(x) ? kFormatNHWC : kFormatNCHW;
  return first ? kFormatNCHW : last ? kFormatNHWC : -1;
}

// An operand the plan reads or writes as a packed copy (of the staged layout): its own layout's
// descriptor, the copy's, and the copy's size.
struct StagedOperand {
  TensorDesc given = nullptr, packed = nullptr;
  int64_t bytes = 0;
};

// Descriptors and the chosen algorithm of one problem, made once and kept for the process:
// a model runs the same few convolutions on every call.
struct Plan {
  TensorDesc x = nullptr, y = nullptr, bias = nullptr;  // y: dy for the backward ones
  FilterDesc w = nullptr;
  ConvDesc conv = nullptr;
  int algorithm = 0;
  size_t workspace = 0;
  // cuDNN 9's heuristics have no algorithm for some layouts (an activation channels-last and
  // a gradient channels-first; a channels-last filter without TF32): then the plan is for
  // packed operands of one layout, channels-last (what its tensor-core kernels read) or else
  // channels-first, and those given otherwise are staged through copies
  // (cudnnTransformTensor), in order x, w, y.
  StagedOperand staged[3];
};

enum class Direction { Forward, BackwardData, BackwardFilter };

std::string key_of(Direction direction, const DnnConvolution& c, const DnnTensor& x,
                   const DnnTensor& w, const DnnTensor& y, bool bias) {
  std::string key = std::to_string(int(direction)) + "|" + std::to_string(int(c.dtype)) + "|" +
                    std::to_string(c.groups) + "|" + std::to_string(c.allow_tf32) + "|" +
                    std::to_string(bias) + "|" + std::to_string(device().ordinal);
  auto add = [&](const std::vector<int64_t>& values) {
    key += "|";
    for (int64_t v : values) key += std::to_string(v) + ",";
  };
  for (const auto* list : {&c.strides, &c.padding, &c.dilation, &x.shape, &x.strides, &w.shape,
                           &w.strides, &y.shape, &y.strides})
    add(*list);
  return key;
}

// The strides of `shape` packed in a layout (layout_order).
std::vector<int64_t> packed_strides(const std::vector<int64_t>& shape, bool channels_last) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t stride = 1;
  const std::vector<size_t> order = layout_order(shape.size(), channels_last);
  for (size_t i = order.size(); i-- > 0;) {
    strides[order[i]] = stride;
    stride *= shape[order[i]];
  }
  return strides;
}

// Strides cuDNN accepts. A dimension of extent 1 has no stride of its own (torch and kiln may
// give it any), but cuDNN matches strides exactly to see a packed layout: a channels-last
// activation of batch 1 whose batch stride was C read as strided, and every convolution on it
// staged the input through cuDNN's generic transposes (r(2+1)d_18 at batch 1 on an H200: 7.9 ms
// a call, 6.3 of them in transposeDirect and cubeTranspose; 1.9 ms now, eager 3.6). So a tensor
// packed in either layout (extents of 1 aside) gets that layout's packed strides; otherwise an
// extent-1 dimension gets the stride it would have packed inside the next one.
std::vector<int> strides_of(const DnnTensor& t) {
  std::vector<int64_t> strides = t.strides, shape = t.shape;
  while (shape.size() < 4) shape.push_back(1), strides.push_back(1);
  for (bool channels_last : {false, true})
    if (packed_in_order(shape, strides, layout_order(shape.size(), channels_last))) {
      std::vector<int> result;
      for (int64_t stride : packed_strides(shape, channels_last)) result.push_back(narrow(stride));
      return result;
    }
  std::vector<int> result(shape.size());
  for (size_t d = shape.size(); d-- > 0;)
    result[d] = shape[d] != 1 || d + 1 == shape.size() ? narrow(strides[d])
                                                        : narrow(int64_t(result[d + 1]) * shape[d + 1]);
  return result;
}

TensorDesc tensor_desc(int type, const DnnTensor& t) {
  TensorDesc desc = nullptr;
  check(dnn().cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor");
  std::vector<int> dims = dims_of(t.shape), strides = strides_of(t);
  check(dnn().cudnnSetTensorNdDescriptor(desc, type, int(dims.size()), dims.data(), strides.data()),
        "cudnnSetTensorNdDescriptor");
  return desc;
}

// The heuristics' best algorithm for the plan's descriptors that applies (its math type is the
// one it was ranked with; FMA math, no TF32, is kept where asked for); false: none.
bool choose_algorithm(Direction direction, Plan& plan, int math, Handle h) {
  const DnnApi& api = dnn();
  AlgorithmPerf perf[kMostAlgorithms] = {};
  int returned = 0;
  if (direction == Direction::Forward)
    check(api.cudnnGetConvolutionForwardAlgorithm_v7(h, plan.x, plan.w, plan.conv, plan.y,
                                                     kMostAlgorithms, &returned, perf),
          "cudnnGetConvolutionForwardAlgorithm_v7");
  else if (direction == Direction::BackwardData)
    check(api.cudnnGetConvolutionBackwardDataAlgorithm_v7(h, plan.w, plan.y, plan.conv, plan.x,
                                                          kMostAlgorithms, &returned, perf),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  else
    check(api.cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, plan.x, plan.y, plan.conv, plan.w,
                                                            kMostAlgorithms, &returned, perf),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  const AlgorithmPerf* best = nullptr;
  for (int i = 0; i < returned && best == nullptr; ++i)
    if (perf[i].status == kDnnSuccess && (math != kFmaMath || perf[i].math_type == kFmaMath ||
                                          perf[i].math_type == kDefaultMath))
      best = &perf[i];
  if (best == nullptr) return false;
  plan.algorithm = best->algorithm;
  if (math != kFmaMath)
    check(api.cudnnSetConvolutionMathType(plan.conv, best->math_type),
          "cudnnSetConvolutionMathType");
  return true;
}

Plan make_plan(Direction direction, const DnnConvolution& c, const DnnTensor& x,
               const DnnTensor& w, const DnnTensor& y, const DnnTensor* bias, Handle h) {
  const DnnApi& api = dnn();
  const int type = data_type(c.dtype);
  if (type < 0)
    throw Error(ErrorKind::Unsupported, "kiln: convolution on device=\"cuda\": cuDNN has no " +
                                            std::string(dtype_name(c.dtype)) + " convolution");
  const int format = filter_format(w, x);
  if (format < 0)
    throw Error(ErrorKind::Unsupported,
                "kiln: convolution on device=\"cuda\": the weight is neither packed (O, C, "
                "*kernel) nor channels-last (cuDNN's filters have no strides)");
  Plan plan;
  plan.x = tensor_desc(type, x);
  plan.y = tensor_desc(type, y);
  if (bias != nullptr) {  // (1, O, 1, ...) broadcast over y
    DnnTensor b{bias->data, std::vector<int64_t>(y.shape.size(), 1), {}};
    b.shape[1] = bias->shape[0];
    b.strides.assign(y.shape.size(), 1);
    b.strides[1] = bias->strides.empty() ? 1 : bias->strides[0];
    plan.bias = tensor_desc(type, b);
  }
  check(api.cudnnCreateFilterDescriptor(&plan.w), "cudnnCreateFilterDescriptor");
  std::vector<int> w_dims = dims_of(w.shape);
  check(api.cudnnSetFilterNdDescriptor(plan.w, type, format, int(w_dims.size()), w_dims.data()),
        "cudnnSetFilterNdDescriptor");
  check(api.cudnnCreateConvolutionDescriptor(&plan.conv), "cudnnCreateConvolutionDescriptor");
  const size_t spatial = dnn_rank(x.shape.size()) - 2;
  std::vector<int> padding(spatial, 0), strides(spatial, 1), dilation(spatial, 1);
  for (size_t d = 0; d < c.strides.size(); ++d)
    padding[d] = narrow(c.padding[d]), strides[d] = narrow(c.strides[d]),
    dilation[d] = narrow(c.dilation[d]);
  check(api.cudnnSetConvolutionNdDescriptor(plan.conv, int(spatial), padding.data(), strides.data(),
                                            dilation.data(), kCrossCorrelation,
                                            c.dtype == DType::Float64 ? kDouble : kFloat),
        "cudnnSetConvolutionNdDescriptor");
  check(api.cudnnSetConvolutionGroupCount(plan.conv, narrow(c.groups)),
        "cudnnSetConvolutionGroupCount");
  const int math = c.dtype == DType::Float16 || c.dtype == DType::BFloat16 ? kTensorOpMath
                   : c.dtype == DType::Float32 && c.allow_tf32             ? kDefaultMath
                                                                           : kFmaMath;
  check(api.cudnnSetConvolutionMathType(plan.conv, math), "cudnnSetConvolutionMathType");
  const TensorDesc given_x = plan.x, given_y = plan.y;
  bool chosen = choose_algorithm(direction, plan, math, h);
  for (bool channels_last : {true, false}) {
    if (chosen) break;
    // Staged: each operand not packed in this layout gets a packed copy's descriptor.
    const DnnTensor* operands[3] = {&x, &w, &y};
    for (size_t k = 0; k < 3; ++k) {
      const DnnTensor& t = *operands[k];
      StagedOperand& staged = plan.staged[k];
      staged = StagedOperand{};  // descriptors of a tried layout stay alive: a few per problem
      if (packed_in_order(t.shape, t.strides, layout_order(t.shape.size(), channels_last)))
        continue;
      DnnTensor packed{nullptr, t.shape, packed_strides(t.shape, channels_last)};
      staged.given = tensor_desc(type, t);
      staged.packed = tensor_desc(type, packed);
      staged.bytes = int64_t(dtype_size(c.dtype));
      for (int64_t extent : t.shape) staged.bytes *= extent;
    }
    plan.x = plan.staged[0].packed ? plan.staged[0].packed : given_x;
    plan.y = plan.staged[2].packed ? plan.staged[2].packed : given_y;
    // The filter is packed in this layout now, or staged into it.
    check(api.cudnnSetFilterNdDescriptor(plan.w, type, channels_last ? kFormatNHWC : kFormatNCHW,
                                         int(w_dims.size()), w_dims.data()),
          "cudnnSetFilterNdDescriptor");
    chosen = choose_algorithm(direction, plan, math, h);
  }
  if (!chosen)
    throw Error(ErrorKind::Unsupported,
                "kiln: convolution on device=\"cuda\": cuDNN has no algorithm for this problem");
  if (direction == Direction::Forward)
    check(api.cudnnGetConvolutionForwardWorkspaceSize(h, plan.x, plan.w, plan.conv, plan.y,
                                                      plan.algorithm, &plan.workspace),
          "cudnnGetConvolutionForwardWorkspaceSize");
  else if (direction == Direction::BackwardData)
    check(api.cudnnGetConvolutionBackwardDataWorkspaceSize(h, plan.w, plan.y, plan.conv, plan.x,
                                                           plan.algorithm, &plan.workspace),
          "cudnnGetConvolutionBackwardDataWorkspaceSize");
  else
    check(api.cudnnGetConvolutionBackwardFilterWorkspaceSize(h, plan.x, plan.y, plan.conv, plan.w,
                                                             plan.algorithm, &plan.workspace),
          "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  return plan;
}

const Plan& plan_for(Direction direction, const DnnConvolution& c, const DnnTensor& x,
                     const DnnTensor& w, const DnnTensor& y, const DnnTensor* bias, Handle h) {
  static std::mutex mutex;
  static auto* plans = new std::map<std::string, Plan>;  // never destroyed
  std::string key = key_of(direction, c, x, w, y, bias != nullptr);
  std::lock_guard<std::mutex> lock(mutex);
  auto found = plans->find(key);
  if (found == plans->end())
    found = plans->emplace(key, make_plan(direction, c, x, w, y, bias, h)).first;
  return found->second;  // std::map nodes stay put
}

void check_shapes(const DnnConvolution& c, const DnnTensor& x, const DnnTensor& w,
                  const DnnTensor& y) {
  const size_t spatial = x.shape.size() - 2;
  bool ok = x.shape.size() >= 3 && x.shape.size() <= 8 && w.shape.size() == x.shape.size() &&
            y.shape.size() == x.shape.size() && x.strides.size() == x.shape.size() &&
            y.strides.size() == y.shape.size() && w.strides.size() == w.shape.size() &&
            c.strides.size() == spatial && c.padding.size() == spatial &&
            c.dilation.size() == spatial && c.groups >= 1;
  if (!ok)
    throw Error(ErrorKind::Internal, "kiln: convolution on device=\"cuda\": operand ranks disagree");
}

// cuDNN's alpha and beta: double for double data, float otherwise.
struct Scale {
  explicit Scale(DType dtype) : f64(dtype == DType::Float64) {}
  const void* one() const { return f64 ? static_cast<const void*>(&one64) : &one32; }
  const void* zero() const { return f64 ? static_cast<const void*>(&zero64) : &zero32; }
  bool f64;
  double one64 = 1.0, zero64 = 0.0;
  float one32 = 1.0f, zero32 = 0.0f;
};

std::shared_ptr<void> workspace(const Plan& plan, std::vector<std::shared_ptr<void>>* kept) {
  std::shared_ptr<void> space =
      plan.workspace > 0 ? allocate(static_cast<int64_t>(plan.workspace)) : nullptr;
  if (space && kept) kept->push_back(space);
  return space;
}

}  // namespace

bool dnn_computes(DType dtype) { return data_type(dtype) >= 0; }

namespace {

// The operands' device addresses a call passes cuDNN: x, w and y (dy for the backward ones).
struct Operands {
  const void* x;
  const void* w;
  const void* y;
};

// The steps every direction shares: the thread's handle on `stream`, the problem's plan, the
// scale factors and a workspace; staged operands (Plan::staged) copied in, or out for
// `written` (0 x, 1 w, 2 y: what the direction computes); then
// `call(handle, plan, scale, workspace, operands)`.
template <class Call>
void run_planned(Direction direction, const DnnConvolution& c, const DnnTensor& x,
                 const DnnTensor& w, const DnnTensor& y, const DnnTensor* bias, size_t written,
                 void* stream, std::vector<std::shared_ptr<void>>* kept, Call&& call) {
  check_shapes(c, x, w, y);
  Handle h = handle(stream);
  const Plan& plan = plan_for(direction, c, x, w, y, bias, h);
  std::shared_ptr<void> space = workspace(plan, kept);
  const Scale scale(c.dtype);
  const void* given[3] = {x.data, w.data, y.data};
  const void* used[3] = {x.data, w.data, y.data};
  std::shared_ptr<void> copies[3];
  for (size_t k = 0; k < 3; ++k) {
    const StagedOperand& staged = plan.staged[k];
    if (!staged.packed) continue;
    copies[k] = allocate(staged.bytes);
    if (kept) kept->push_back(copies[k]);
    used[k] = copies[k].get();
    if (k != written)
      check(dnn().cudnnTransformTensor(h, scale.one(), staged.given, given[k], scale.zero(),
                                       staged.packed, copies[k].get()),
            "cudnnTransformTensor");
  }
  call(h, plan, scale, space.get(), Operands{used[0], used[1], used[2]});
  const StagedOperand& out = plan.staged[written];
  if (out.packed)
    check(dnn().cudnnTransformTensor(h, scale.one(), out.packed, used[written], scale.zero(),
                                     out.given, const_cast<void*>(given[written])),
          "cudnnTransformTensor");
}

}  // namespace

void convolution_forward(const DnnConvolution& c, const DnnTensor& x, const DnnTensor& w,
                         const DnnTensor* bias, const DnnTensor& y, void* stream,
                         std::vector<std::shared_ptr<void>>* kept) {
  run_planned(Direction::Forward, c, x, w, y, bias, 2, stream, kept,
              [&](Handle h, const Plan& plan, const Scale& scale, void* space, Operands data) {
                void* out = const_cast<void*>(data.y);
                check(dnn().cudnnConvolutionForward(h, scale.one(), plan.x, data.x, plan.w, data.w,
                                                    plan.conv, plan.algorithm, space,
                                                    plan.workspace, scale.zero(), plan.y, out),
                      "cudnnConvolutionForward");
                if (bias != nullptr)
                  check(dnn().cudnnAddTensor(h, scale.one(), plan.bias, bias->data, scale.one(),
                                             plan.y, out),
                        "cudnnAddTensor");
              });
}

void convolution_backward_data(const DnnConvolution& c, const DnnTensor& dy, const DnnTensor& w,
                               const DnnTensor& dx, void* stream,
                               std::vector<std::shared_ptr<void>>* kept) {
  run_planned(Direction::BackwardData, c, dx, w, dy, nullptr, 0, stream, kept,
              [&](Handle h, const Plan& plan, const Scale& scale, void* space, Operands data) {
                check(dnn().cudnnConvolutionBackwardData(
                          h, scale.one(), plan.w, data.w, plan.y, data.y, plan.conv,
                          plan.algorithm, space, plan.workspace, scale.zero(), plan.x,
                          const_cast<void*>(data.x)),
                      "cudnnConvolutionBackwardData");
              });
}

void convolution_backward_filter(const DnnConvolution& c, const DnnTensor& dy, const DnnTensor& x,
                                 const DnnTensor& dw, void* stream,
                                 std::vector<std::shared_ptr<void>>* kept) {
  run_planned(Direction::BackwardFilter, c, x, dw, dy, nullptr, 1, stream, kept,
              [&](Handle h, const Plan& plan, const Scale& scale, void* space, Operands data) {
                check(dnn().cudnnConvolutionBackwardFilter(
                          h, scale.one(), plan.x, data.x, plan.y, data.y, plan.conv,
                          plan.algorithm, space, plan.workspace, scale.zero(), plan.w,
                          const_cast<void*>(data.w)),
                      "cudnnConvolutionBackwardFilter");
              });
}

}  // namespace kiln::runtime::cuda
