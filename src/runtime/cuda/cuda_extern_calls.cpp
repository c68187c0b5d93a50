#include "runtime/cuda/cuda_extern_calls.h"

#include <array>
#include <string>
#include <utility>

#include "extern/convolution.h"
#include "extern/extern_calls.h"
#include "extern/matmul_problem.h"
#include "extern/sort.h"
#include "ir/convolution_shape.h"
#include "kiln/error.h"
#include "runtime/cuda/cuda_blas.h"
#include "runtime/cuda/cuda_dnn.h"
#include "runtime/cuda/cuda_driver.h"

namespace kiln::runtime {
namespace {

using externs::extern_operand;
using externs::StridedOperand;

std::string where(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers) {
  return "kiln: " + buffers[static_cast<size_t>(call.output)].origin + ": " +
         std::string(ir::op_name(call.op)) + " on device=\"cuda\": ";
}

// One operand of a product as cuBLAS reads it (column-major): whether to transpose it and its
// leading dimension. A row-major (rows x columns) matrix is the column-major transpose; false
// when neither dimension is unit-stride (cuBLAS cannot read it).
bool blas_layout(int64_t rows, int64_t columns, int64_t row_stride, int64_t column_stride,
                 bool& row_major, int64_t& leading) {
  if (column_stride == 1 || columns == 1) {
    row_major = true;
    leading = std::max<int64_t>(rows == 1 ? columns : row_stride, std::max<int64_t>(columns, 1));
    return rows == 1 || row_stride >= columns;
  }
  if (row_stride == 1 || rows == 1) {
    row_major = false;
    leading = std::max<int64_t>(columns == 1 ? rows : column_stride, std::max<int64_t>(rows, 1));
    return columns == 1 || column_stride >= rows;
  }
  return false;
}

void run_matmul(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                char* const* table, void* stream, const CudaMathSettings& math,
                std::vector<std::shared_ptr<void>>* kept, int candidate) {
  StridedOperand a = extern_operand(call, buffers, table, 0), b = extern_operand(call, buffers, table, 1);
  const sched::Buffer& out = buffers[static_cast<size_t>(call.output)];
  externs::MatmulProblem p = externs::matmul_problem(a, b, out.shape);
  if (p.batches == 0 || p.m == 0 || p.n == 0) return;
  // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS's first operand is B.
  bool b_row_major = false, a_row_major = false;
  cuda::Gemm g;
  g.dtype = a.dtype;
  g.candidate = candidate;
  g.m = p.n, g.n = p.m, g.k = p.k;
  if (!blas_layout(p.k, p.n, p.b_row, p.b_column, b_row_major, g.lda) ||
      !blas_layout(p.m, p.k, p.a_row, p.a_column, a_row_major, g.ldb))
    throw Error(ErrorKind::Unsupported, where(call, buffers) +
                                            "an operand with no unit-stride dimension (cuBLAS "
                                            "cannot read it); make it contiguous first");
  g.transpose_a = !b_row_major, g.transpose_b = !a_row_major;
  g.ldc = std::max<int64_t>(p.n, 1);
  g.stride_c = p.m * p.n;
  // Batch dimensions that step uniformly in both operands merge; the innermost (merged) one is
  // cuBLAS's batch, the others a loop here.
  std::vector<int64_t> batch, a_strides, b_strides;
  for (size_t d = 0; d < p.batch.size(); ++d) {
    if (p.batch[d] == 1) continue;
    if (!batch.empty() && a_strides.back() == p.a_batch_strides[d] * p.batch[d] &&
        b_strides.back() == p.b_batch_strides[d] * p.batch[d]) {
      batch.back() *= p.batch[d];
      a_strides.back() = p.a_batch_strides[d], b_strides.back() = p.b_batch_strides[d];
      continue;
    }
    batch.push_back(p.batch[d]);
    a_strides.push_back(p.a_batch_strides[d]);
    b_strides.push_back(p.b_batch_strides[d]);
  }
  if (call.inputs.size() > 2) {  // an epilogue (passes/matmul_epilogues.cpp): bias, ReLU
    StridedOperand bias = extern_operand(call, buffers, table, 2);
    if (bias.shape.size() != 1 || bias.shape[0] != p.n || (p.n > 1 && bias.strides[0] != 1))
      throw Error(ErrorKind::Internal, where(call, buffers) + "the bias is not a packed vector");
    g.bias = bias.data;
    g.relu = !call.parameters.empty() && call.parameters[0] != 0;
  }
  g.batches = batch.empty() ? 1 : batch.back();
  g.stride_a = batch.empty() ? 0 : b_strides.back();
  g.stride_b = batch.empty() ? 0 : a_strides.back();
  const size_t outer_rank = batch.empty() ? 0 : batch.size() - 1;
  externs::MatmulProblem outer = p;  // the loop over the other batch dimensions
  outer.batch.assign(batch.begin(), batch.begin() + static_cast<ptrdiff_t>(outer_rank));
  outer.a_batch_strides.assign(a_strides.begin(), a_strides.begin() + static_cast<ptrdiff_t>(outer_rank));
  outer.b_batch_strides.assign(b_strides.begin(), b_strides.begin() + static_cast<ptrdiff_t>(outer_rank));
  outer.batches = p.batches / g.batches;
  const int element = dtype_size(a.dtype);
  externs::for_each_batch_entry(outer, [&](int64_t t, int64_t offset_a, int64_t offset_b) {
    cuda::Gemm entry = g;
    entry.a = static_cast<const char*>(b.data) + offset_b * element;
    entry.b = static_cast<const char*>(a.data) + offset_a * element;
    entry.c = table[call.output] + t * g.batches * p.m * p.n * element;
    cuda::gemm(entry, stream, math.matmul_tf32, kept);
  });
}

cuda::DnnTensor dnn_tensor(const StridedOperand& operand) {
  return {operand.data, operand.shape, operand.strides};
}

// A channels-last operand seen as the channels-first one it permutes (shape and strides by
// `order`): cuDNN takes a layout from strides, and a filter's from them (filter_format).
void permute(cuda::DnnTensor& t, const std::vector<int64_t>& order) {
  t.shape = ir::permuted(t.shape, order);
  t.strides = ir::permuted(t.strides, order);
}

// The convolution's output buffer as cuDNN sees it (channels-first, with its strides).
cuda::DnnTensor output_tensor(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                              char* const* table) {
  const sched::Buffer& out = buffers[static_cast<size_t>(call.output)];
  return {table[call.output], out.shape, out.strides};
}

cuda::DnnConvolution dnn_convolution(const sched::ExternCall& call, DType dtype, size_t rank,
                                     bool tf32) {
  externs::ConvolutionParameters parameters =
      externs::convolution_parameters(call.parameters, rank - 2);
  return {dtype, parameters.strides, parameters.padding, parameters.dilation, parameters.groups,
          tf32};
}

// The shapes a cached program carries must make the convolution it describes (a mismatch
// must not become a write past the result).
void check_geometry(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                    const cuda::DnnConvolution& c, const std::vector<int64_t>& x,
                    const std::vector<int64_t>& w, const std::vector<int64_t>& y) {
  ir::ConvolutionGeometry geometry;
  std::string problem = ir::convolution_geometry(x, w, std::nullopt, c.strides, c.padding,
                                                 c.dilation, c.groups, geometry);
  if (problem.empty() && geometry.output_shape() != y) problem = "the result's shape disagrees";
  if (!problem.empty()) throw Error(ErrorKind::Internal, where(call, buffers) + problem);
}

void run_convolution(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                     char* const* table, void* stream, const CudaMathSettings& math,
                     std::vector<std::shared_ptr<void>>* kept, int /*candidate: one*/) {
  cuda::DnnTensor x = dnn_tensor(extern_operand(call, buffers, table, 0));
  cuda::DnnTensor w = dnn_tensor(extern_operand(call, buffers, table, 1));
  cuda::DnnTensor y = output_tensor(call, buffers, table);
  std::optional<cuda::DnnTensor> bias;
  if (call.inputs.size() > 2) bias = dnn_tensor(extern_operand(call, buffers, table, 2));
  const size_t rank = x.shape.size();
  if (call.parameters.back() != 0) {  // channels-last operands: views of channels-first ones
    const std::vector<int64_t> order = ir::channels_first_order(rank);
    for (cuda::DnnTensor* t : {&x, &y}) permute(*t, order);
    if (call.parameters.back() == 2) permute(w, order);  // a channels-last (NHWC) filter
  }
  cuda::DnnConvolution c =
      dnn_convolution(call, buffers[static_cast<size_t>(call.output)].dtype, rank,
                      math.convolution_tf32);
  check_geometry(call, buffers, c, x.shape, w.shape, y.shape);
  cuda::convolution_forward(c, x, w, bias ? &*bias : nullptr, y, stream, kept);
}

void run_convolution_backward(const sched::ExternCall& call,
                              const std::vector<sched::Buffer>& buffers, char* const* table,
                              void* stream, const CudaMathSettings& math,
                              std::vector<std::shared_ptr<void>>* kept, int /*candidate: one*/) {
  cuda::DnnTensor dy = dnn_tensor(extern_operand(call, buffers, table, 0));
  cuda::DnnTensor other = dnn_tensor(extern_operand(call, buffers, table, 1));
  cuda::DnnTensor result = output_tensor(call, buffers, table);
  cuda::DnnConvolution c = dnn_convolution(call, buffers[static_cast<size_t>(call.output)].dtype,
                                           dy.shape.size(), math.convolution_tf32);
  if (call.parameters.back() != 0) {  // channels-last activations: views of channels-first ones
    const std::vector<int64_t> order = ir::channels_first_order(dy.shape.size());
    const bool for_input = call.op == ir::Op::convolution_backward_input;
    cuda::DnnTensor* activation = for_input ? &result : &other;
    for (cuda::DnnTensor* t : {&dy, activation}) permute(*t, order);
    if (call.parameters.back() == 2) permute(for_input ? other : result, order);  // the filter
  }
  if (call.op == ir::Op::convolution_backward_input) {
    check_geometry(call, buffers, c, result.shape, other.shape, dy.shape);
    cuda::convolution_backward_data(c, dy, other, result, stream, kept);
  } else {
    check_geometry(call, buffers, c, other.shape, result.shape, dy.shape);
    cuda::convolution_backward_filter(c, dy, other, result, stream, kept);
  }
}

// The element offsets [low, high] a strided view reaches from its start (empty: count 0).
int64_t view_span(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                  int64_t& low) {
  low = 0;
  int64_t high = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return 0;
    (strides[d] < 0 ? low : high) += (shape[d] - 1) * strides[d];
  }
  return high - low + 1;
}

// argsort and sort have no GPU kernel yet: the elements the operand reaches are copied to the
// host, sorted there by the CPU kernel (extern/sort.h) and the positions or values copied back,
// on `stream` (a program with one is never captured into a CUDA graph: cuda_executable.cpp).
void run_sort(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                 char* const* table, void* stream, const CudaMathSettings&,
                 std::vector<std::shared_ptr<void>>*, int) {
  StridedOperand in = extern_operand(call, buffers, table, 0);
  const sched::Buffer& out = buffers[static_cast<size_t>(call.output)];
  if (call.parameters.size() < 2)
    throw Error(ErrorKind::Internal,
                where(call, buffers) + "parameters {axis, descending, picks...}");
  int64_t low = 0, out_low = 0;
  const int64_t span = view_span(in.shape, in.strides, low);
  const int64_t out_span = view_span(out.shape, out.strides, out_low);
  if (span == 0 || out_span == 0) return;
  const int64_t element = dtype_size(in.dtype);
  std::vector<char> values(static_cast<size_t>(span * element));
  cuda::copy_to_host(values.data(), static_cast<const char*>(in.data) + low * element,
                     span * element, stream);
  in.data = values.data() - low * element;  // low <= 0: the view's start inside the copy
  const int64_t out_element = dtype_size(out.dtype);
  std::vector<char> result(static_cast<size_t>(out_span * out_element));
  externs::sort(in, call.parameters[0], call.parameters[1] != 0, call.op == ir::Op::argsort,
                result.data() - out_low * out_element, out.shape, out.strides, 0,
                std::vector<int64_t>(call.parameters.begin() + 2, call.parameters.end()));
  cuda::copy_to_device(table[call.output] + out_low * out_element, result.data(),
                       out_span * out_element, stream);
}

bool real_dtype(DType dtype) { return !is_complex(dtype); }

using CudaExternFunction = void (*)(const sched::ExternCall&, const std::vector<sched::Buffer>&,
                                    char* const*, void*, const CudaMathSettings&,
                                    std::vector<std::shared_ptr<void>>*, int);
struct Entry {
  ir::Op op;
  CudaExternFunction run;
  bool (*computes)(DType);  // the library's dtypes
  int candidates;           // of the library's, for max-autotune (float64: one)
};

constexpr std::array<Entry, 6> kCudaExternCalls = {{
    {ir::Op::argsort, run_sort, real_dtype, 1},
    {ir::Op::sort, run_sort, real_dtype, 1},
    {ir::Op::matmul, run_matmul, cuda::blas_computes, cuda::kGemmCandidates},
    {ir::Op::convolution, run_convolution, cuda::dnn_computes, 1},
    {ir::Op::convolution_backward_input, run_convolution_backward, cuda::dnn_computes, 1},
    {ir::Op::convolution_backward_weight, run_convolution_backward, cuda::dnn_computes, 1},
}};

const Entry* find(ir::Op op) {
  for (const Entry& entry : kCudaExternCalls)
    if (entry.op == op) return &entry;
  return nullptr;
}

}  // namespace

void check_cuda_extern_call(const sched::ExternCall& call,
                            const std::vector<sched::Buffer>& buffers) {
  const Entry* entry = find(call.op);
  DType dtype = buffers[static_cast<size_t>(call.output)].dtype;
  if (entry == nullptr)
    throw Error(ErrorKind::Unsupported, where(call, buffers) + "no GPU library runs it");
  if (!entry->computes(dtype))
    throw Error(ErrorKind::Unsupported, where(call, buffers) + "the GPU libraries have no " +
                                            std::string(dtype_name(dtype)) +
                                            " kernel (float16, bfloat16, float32, float64)");
}

void run_cuda_extern_call(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                          char* const* table, void* stream, const CudaMathSettings& math,
                          std::vector<std::shared_ptr<void>>* kept, int candidate) {
  const Entry* entry = find(call.op);
  if (entry == nullptr) check_cuda_extern_call(call, buffers);
  entry->run(call, buffers, table, stream, math, kept, candidate);
}

int cuda_extern_candidates(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers) {
  const Entry* entry = find(call.op);
  const bool float64 = buffers[static_cast<size_t>(call.output)].dtype == DType::Float64;
  return entry == nullptr || float64 ? 1 : entry->candidates;
}

}  // namespace kiln::runtime
