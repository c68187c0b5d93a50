// A graph with size symbols (ir/shape.h), compiled once for every size it can share code
// across. Each call's sizes give the symbols their values; the graph specialised to them goes
// through the graph passes and the scheduler (milliseconds) and is emitted; the source's
// integers are then read from a table by one size-generic library (codegen/size_parameters.h),
// compiled on the first call from the hints' and a probe's source. Sizes whose code differs in
// more than integers compile their own library (KILN_LOGS=recompiles says why). The choices
// of the passes and the scheduler that depend on sizes are made once, at large sizes, and
// every size follows them (ir/size_choices.h): choices right for small sizes can be far off
// for large ones (a product inlined into loops), while the reverse costs little. On a GPU
// (options.device "cuda") the generic code is CUDA, compiled once by NVRTC; each size's
// launches (grids, blocks) are its own schedule's and pass its integers by value. max-autotune
// on a GPU times each size's own kernels (each size compiles its own).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/pipeline.h"
#include "codegen/size_parameters.h"
#include "ir/size_choices.h"
#include "runtime/shared_library.h"

namespace kiln::detail {

class SizeGenericGraph {
 public:
  // target: options.device's (the GPU's on the first call) when not given; a target this
  // process lacks (tests of the CUDA source on a machine without a GPU) serves generic_source
  // and size_table, not for_sizes.
  SizeGenericGraph(ir::Graph graph, std::vector<std::vector<int64_t>> input_strides,
                   Options options, std::vector<runtime::RuntimeCheck> checks,
                   std::optional<target::Target> target = std::nullopt);

  const ir::Graph& graph() const { return graph_; }
  // The graph compiled for these values of its symbols (kept for later calls). Safe to call
  // from several threads (the Python front end calls it without the GIL).
  std::shared_ptr<CompiledGraph> for_sizes(const std::vector<int64_t>& sizes);
  // Libraries the toolchain built for this graph (the size-generic one counts once).
  int compiles() const { return compiles_; }
  // Whether these sizes' program is kept (a later call at them runs at once).
  bool keeps(const std::vector<int64_t>& sizes) const { return by_sizes_.count(sizes) != 0; }
  // The first call's generic source (from the hints' code and the probes'), made if not yet,
  // or null with `why` saying why there is none. Nothing is compiled.
  const codegen::SizeGenericSource* generic_source(std::string& why);
  // The generic source's table for `sizes`, or nullopt with `why` (they compile their own).
  std::optional<std::vector<int64_t>> size_table(const std::vector<int64_t>& sizes,
                                                 std::string& why);
  // Why every size follows the hints' size choices rather than those made at large sizes (the
  // program there had another structure: the place in kiln's source that asked), or "".
  const std::string& choices_at_hints() const { return choices_at_hints_; }

 private:
  struct Emitted {
    PreparedGraph prepared;
    sched::Program program;
    codegen::CppSource source;       // the CPU's
    codegen::CudaSource cuda_source;  // or the GPU's
  };
  bool on_gpu() const { return target_->kind == target::DeviceKind::Cuda; }
  codegen::SourcePieces pieces(const Emitted& emitted) const;
  // The program and source for `sizes`, with the recorded size choices.
  Emitted emit(const std::vector<int64_t>& sizes);
  // emit's stages without the size choices' scope.
  Emitted emit_unscoped(const std::vector<int64_t>& sizes,
                        const sched::Program* decisions = nullptr);
  void record_size_choices();
  // The first call's work up to the generic source (hint_ and generic_, or no_generic_).
  void make_generic_source();
  void load_generic_library(const Emitted& hint);
  void load_generic_modules();
  // nullptr (and `why`) when the sizes' source is not the generic one's.
  std::shared_ptr<CompiledGraph> on_generic_library(Emitted emitted,
                                                    const std::vector<int64_t>& sizes,
                                                    std::string& why);

  ir::Graph graph_;
  std::vector<std::vector<int64_t>> input_strides_;
  Options options_;
  std::vector<runtime::RuntimeCheck> checks_;
  // The sizes called so far, each with its program and intermediates (kept while they fit:
  // size_generic_graph.cpp's kKeptSizes and kKeptArenaBytes), the least recently used
  // dropped first (rebuilt in milliseconds on the generic code when asked again).
  struct Kept {
    std::shared_ptr<CompiledGraph> compiled;
    int64_t arena_bytes = 0;
    uint64_t last_use = 0;
  };
  std::map<std::vector<int64_t>, Kept> by_sizes_;
  int64_t kept_arena_bytes_ = 0;
  uint64_t uses_ = 0;
  void keep(const std::vector<int64_t>& sizes, std::shared_ptr<CompiledGraph> compiled);
  bool tried_generic_ = false;
  std::string no_generic_;  // why there is no size-generic library
  std::string choices_at_hints_;
  std::optional<target::Target> target_;  // set on the first call (the device's)
  std::optional<Emitted> hint_;           // the hints' code, until their first call takes it
  std::optional<codegen::SizeGenericSource> generic_;
  std::shared_ptr<runtime::SharedLibrary> library_;
  std::mutex for_sizes_mutex_;
  std::vector<std::shared_ptr<runtime::cuda::Module>> modules_;  // the GPU's generic code
  std::string library_path_;
  std::optional<sched::Program> hint_program_;  // its choices on sizes are every size's
  ir::SizeChoices size_choices_{ir::SizeChoices::Mode::Record};
  std::vector<int64_t> choice_sizes_;  // where size_choices_ were recorded
  // The graph passes that changed the hints' graph: recorded, verified after each pass, until
  // the hints' code is made; replayed on every later size (passes::PassRecord).
  passes::PassRecord pass_record_;
  int compiles_ = 0;
};

}  // namespace kiln::detail
