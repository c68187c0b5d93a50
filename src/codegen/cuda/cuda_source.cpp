// The CUDA source of a whole Program (emit_cuda): the header (prelude, math, the constants the
// kernels read), each kernel's launches as CudaKernelEmitter writes them (and, for max-autotune,
// the launches other launch shapes would make), then the sorts, skinny products and device
// loops that replace extern steps or run loops. A kernel's own code is cuda_emitter.cpp's.
#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <unordered_map>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/kernel_emitter.h"
#include "kiln/error.h"
#include "prelude_text.h"
#include "sched/kernel_hash.h"

namespace kiln::codegen {

namespace {

// After scalar_math.h: shuffles of the Welford state.
constexpr const char* kWelfordShuffle =
    "template <class T>\n"
    "KILN_FN kiln_welford<T> kiln_shuffle_down(kiln_welford<T> w, int delta) {\n"
    "  w.count = kiln_shuffle_down(w.count, delta);\n"
    "  w.mean = kiln_shuffle_down(w.mean, delta);\n"
    "  w.m2 = kiln_shuffle_down(w.m2, delta);\n"
    "  return w;\n"
    "}\n"
    "template <class T>\n"
    "KILN_FN kiln_welford<T> kiln_shuffle_first(kiln_welford<T> w) {\n"
    "  w.count = kiln_shuffle_first(w.count);\n"
    "  w.mean = kiln_shuffle_first(w.mean);\n"
    "  w.m2 = kiln_shuffle_first(w.m2);\n"
    "  return w;\n"
    "}\n";

std::string constant_array_definition(const sched::Buffer& buffer) {
  size_t count = constant_count(buffer);
  return "__device__ const " + storage_type(buffer.dtype) + " " + buffer.name + "[" +
         std::to_string(count ? count : 1) + "]" + (count ? constant_array_values(buffer) : " = {};\n");
}

// The grid and block of `plan`'s launch, and its scratch.
runtime::CudaLaunch launch_geometry(const cuda_detail::LaunchPlan& plan, int64_t most_blocks) {
  using namespace cuda_detail;
  runtime::CudaLaunch launch;
  launch.threads = plan.threads;
  switch (plan.kind) {
    case LaunchKind::ThreadPerIteration: {
      int64_t per_block =
          int64_t(plan.threads) * plan.unroll * plan.vector_lanes * serial_iterations(plan);
      launch.blocks = std::min(kMostRunBlocks, (plan.iterations + per_block - 1) / per_block);
      break;
    }
    case LaunchKind::BlockPerIteration: {
      // A block a row, all at once: a grid-stride walk of the rows by 8 blocks a
      // multiprocessor left the last wave's blocks running alone (H200, softmax of 4096 rows
      // of 1024 floats: 12.5 -> 11.5 us). Warps a row keep the walk (BERT's short rows).
      const int64_t per_block = plan.warp_iterations ? plan.threads / kWarp : 1;
      const int64_t blocks = (plan.iterations + per_block - 1) / per_block;
      launch.blocks = plan.block_splits > 1  ? plan.iterations * plan.block_splits
                      : plan.warp_iterations ? std::min(most_blocks, blocks)
                                             : std::min(kMostRunBlocks, blocks);
      break;
    }
    case LaunchKind::SplitReduce:
      launch.blocks = std::min(most_blocks, (plan.split_work + plan.threads - 1) / plan.threads);
      launch.scratch_bytes = 16 + 8 * plan.state_fields * launch.blocks;
      break;
    case LaunchKind::ColumnTiles:
      launch.blocks = plan.block_splits > 1 ? plan.column_tiles * plan.block_splits
                                             : std::min(most_blocks, plan.column_tiles);
      break;
    case LaunchKind::ScanTiles:
      launch.blocks = scan_tile_count(plan);
      launch.scratch_bytes = scan_scratch_bytes(plan);
      break;
    default:
      launch.blocks = 1;
  }
  launch.blocks = std::max<int64_t>(launch.blocks, 1);
  if (plan.block_splits > 1) launch.scratch_bytes = split_scratch_bytes(plan);
  return launch;
}

// The launches of `kernel` planned for `target`, their functions' code appended to `text`,
// each named `kernel.name`_<launch><suffix>.
std::vector<runtime::CudaLaunch> emit_launches(const Program& program, const Kernel& kernel,
                                               const Options& options, const target::Target& target,
                                               const std::vector<int32_t>& arguments,
                                               const std::string& suffix, std::string& text) {
  using namespace cuda_detail;
  const int64_t most_blocks = kBlocksPerMultiprocessor * std::max(1, target.multiprocessors);
  std::vector<runtime::CudaLaunch> launches;
  std::vector<LaunchPlan> plans = plan_launches(program, kernel, target);
  for (const std::vector<size_t>& group : combined_launches(program, kernel, plans)) {
    const LaunchPlan& plan = plans[*std::max_element(
        group.begin(), group.end(),
        [&](size_t a, size_t b) { return plans[a].threads < plans[b].threads; })];
    runtime::CudaLaunch launch = launch_geometry(plan, most_blocks);
    launch.symbol = kernel.name + "_" + std::to_string(group.front()) + suffix;
    CudaKernelEmitter emitter(program, kernel, options, target, arguments, plan);
    if (group.size() > 1) {
      std::vector<CudaKernelEmitter::Part> parts;
      launch.blocks = 0;
      for (size_t k : group) {
        parts.push_back({&plans[k], launch_geometry(plans[k], most_blocks).blocks});
        launch.blocks += parts.back().blocks;
      }
      emitter.combine(std::move(parts));
    }
    std::string code = emitter.emit();
    code.replace(code.find("KILN_KERNEL_NAME"), std::strlen("KILN_KERNEL_NAME"), launch.symbol);
    text += code + "\n";
    launches.push_back(launch);
  }
  return launches;
}

// Whether two launch lists of one kernel are the same work (their code, named apart, too).
bool same_launches(const std::vector<runtime::CudaLaunch>& a, const std::string& a_text,
                   const std::vector<runtime::CudaLaunch>& b, std::string b_text) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].blocks != b[k].blocks || a[k].threads != b[k].threads ||
        a[k].scratch_bytes != b[k].scratch_bytes)
      return false;
    for (size_t at = b_text.find(b[k].symbol + "("); at != std::string::npos;
         at = b_text.find(b[k].symbol + "(", at))
      b_text.replace(at, b[k].symbol.size(), a[k].symbol);
  }
  return a_text == b_text;
}

}  // namespace

std::vector<target::Target> launch_variants(const target::Target& target) {
  std::vector<target::Target> variants;
  auto add = [&](int block_threads, int thread_steps) {
    target::Target variant = target;
    variant.block_threads = block_threads, variant.thread_steps = thread_steps;
    variants.push_back(variant);
  };
  add(target.block_threads / 2, target.thread_steps);
  add(target.block_threads * 2, target.thread_steps);
  add(target.block_threads, 1);
  add(target.block_threads, target.thread_steps * 2);
  return variants;
}

CudaSource emit_cuda(const Program& program, const Options& options,
                     const target::Target& target, bool launch_alternatives) {
  using namespace cuda_detail;
  if (target.kind != target::DeviceKind::Cuda)
    throw Error(ErrorKind::Internal, "kiln: emit_cuda called for " + target.description());
  CudaSource source;
  std::ostringstream header;
  header << "// Generated by kiln for " << target.description() << ". The comments above each\n"
            "// kernel's functions are the graph lines it implements; a kernel's functions run in\n"
            "// order, kernels with the same code share them.\n";
  header << kCudaPreludeText << "\n" << kScalarMathText << "\n" << kScalarRandomText << "\n" << kWelfordShuffle
         << op_table_text() << "\n";
  // The constants the kernels read (a graph may keep one nothing reads, at some sizes only).
  std::set<int32_t> read;
  for (const Kernel& kernel : program.kernels)
    for (const sched::Expr& e : kernel.exprs)
      if (e.kind == sched::ExprKind::Load) read.insert(e.buffer);
  for (int32_t b : read)
    if (program.buffers[static_cast<size_t>(b)].role == sched::BufferRole::Constant)
      header << constant_array_definition(program.buffers[static_cast<size_t>(b)]);
  source.header = header.str();
  const std::vector<target::Target> variants =
      launch_alternatives ? launch_variants(target) : std::vector<target::Target>{};
  const DeviceLoops device_loops = plan_device_loops(program, target);
  std::unordered_map<std::string, size_t> kernel_of_key;  // the first kernel of each code
  for (const Kernel& kernel : program.kernels) {
    if (device_loops.kernels.count(static_cast<int32_t>(source.kernels.size()))) {
      source.kernels.emplace_back();  // run by its loop's kernel only
      continue;
    }
    sched::KernelSignature signature = sched::kernel_signature(kernel, program);
    auto found = kernel_of_key.find(signature.key);
    if (found != kernel_of_key.end()) {
      runtime::CudaKernelCall same = source.kernels[found->second];
      same.arguments = signature.arguments;
      source.kernels.push_back(same);
      continue;
    }
    kernel_of_key.emplace(signature.key, source.kernels.size());
    runtime::CudaKernelCall entry;
    entry.arguments = signature.arguments;
    std::string text;
    for (const std::string& comment : kernel.comments) text += "// " + comment_text(comment) + "\n";
    std::string own;
    entry.launches = emit_launches(program, kernel, options, target, signature.arguments, "", own);
    text += own;
    std::vector<std::string> alternative_code;
    for (size_t v = 0; v < variants.size(); ++v) {
      std::string code;
      std::vector<runtime::CudaLaunch> launches = emit_launches(
          program, kernel, options, variants[v], signature.arguments, "_v" + std::to_string(v), code);
      bool seen = same_launches(entry.launches, own, launches, code);
      for (size_t a = 0; a < entry.alternatives.size() && !seen; ++a)  // variants may agree
        seen = same_launches(entry.alternatives[a], alternative_code[a], launches, code);
      if (seen) continue;
      text += code;
      entry.alternatives.push_back(std::move(launches));
      alternative_code.push_back(std::move(code));
    }
    source.functions.push_back(text);
    source.kernels.push_back(entry);
  }
  add_skinny_matmuls(program, source);
  add_sort_kernels(program, target, source);
  add_device_loops(program, options, target, device_loops, source);
  source.text = source.header;
  for (const std::string& functions : source.functions) source.text += functions;
  return source;
}

}  // namespace kiln::codegen
