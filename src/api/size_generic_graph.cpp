#include "api/size_generic_graph.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "api/logging.h"
#include "codegen/cpp/translation_units.h"
#include "ir/specialize.h"
#include "runtime/disk_cache.h"
#include "runtime/toolchain.h"

namespace kiln::detail {
namespace {

using api::LogChannel;

constexpr size_t kKeptSizes = 64;

// The probes' sizes: each differs from the hints in every symbol, by different amounts, so
// that the integers that depend on the sizes differ from the hints' in at least one (one alone
// may agree by chance: 200 and 250 both have 192 = 3 x 64 in full SIMD blocks). Those near
// the hints keep their magnitudes (the scheduler's thresholds: parallel loops, SIMD lanes);
// `far` keeps their remainders by 64 (block and lane widths). Symbols with equal hints stay
// equal (the layers' KV caches of a decoder, one length in every call): the hints' code is
// made for them equal (two aranges of one length are one), and so must the probes' be.
// Probes whose code has another shape are not used.
std::vector<std::vector<int64_t>> probe_sizes(const std::vector<int64_t>& hints) {
  std::vector<int64_t> above = hints, below = hints, across = hints, far = hints;
  std::map<int64_t, int64_t> groups;  // a hint value -> its index, in order of appearance
  for (size_t k = 0; k < hints.size(); ++k) {
    const int64_t index = groups.emplace(hints[k], static_cast<int64_t>(groups.size())).first->second;
    above[k] += std::max<int64_t>(1, hints[k] / 4) + index;
    below[k] = std::max<int64_t>(2, hints[k] - hints[k] / 4 - 1 - index);
    across[k] += 65 + index;
    far[k] += 64 * (index + 1);
  }
  return {above, below, across, far};
}

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::string text;
  for (size_t k = 0; k < sizes.size(); ++k)
    text += (k ? ", s" : "s") + std::to_string(k) + " = " + std::to_string(sizes[k]);
  return text;
}

}  // namespace

SizeGenericGraph::SizeGenericGraph(ir::Graph graph, std::vector<std::vector<int64_t>> input_strides,
                                   Options options, std::vector<runtime::RuntimeCheck> checks)
    : graph_(std::move(graph)), input_strides_(std::move(input_strides)),
      options_(std::move(options)), checks_(std::move(checks)) {}

// Where the size choices are made: each symbol at least this (a sequence length, a batch).
constexpr int64_t kChoiceSize = 1024;

SizeGenericGraph::Emitted SizeGenericGraph::emit(const std::vector<int64_t>& sizes) {
  if (size_choices_.mode() == ir::SizeChoices::Mode::Replay) size_choices_.replay();
  ir::SizeChoiceScope scope(&size_choices_);
  const std::set<std::string> disabled = cpu_disabled_passes();
  const target::Target target = target::host_cpu(options_.num_threads);
  Emitted emitted;
  emitted.prepared = prepare_graph(ir::specialize(graph_, sizes), input_strides_, disabled);
  emitted.program = schedule_program(emitted.prepared.graph, emitted.prepared.strides, target,
                                     disabled, hint_program_ ? &*hint_program_ : nullptr);
  emitted.source = codegen::emit_cpp(emitted.program, options_, target);
  return emitted;
}

// Records the choices at large sizes; sizes the graph does not take (a position table shorter
// than 1024) fall back to smaller ones (128, 32), then to the hints.
void SizeGenericGraph::record_size_choices() {
  const std::vector<int64_t>& hints = graph_.symbol_hints();
  for (int64_t least : {kChoiceSize, kChoiceSize / 8, kChoiceSize / 32, int64_t(0)}) {
    std::vector<int64_t> sizes = hints;
    for (int64_t& size : sizes) size = std::max(size, least);
    size_choices_ = ir::SizeChoices(ir::SizeChoices::Mode::Record);
    ir::SizeChoiceScope scope(&size_choices_);
    try {
      const std::set<std::string> disabled = cpu_disabled_passes();
      PreparedGraph prepared = prepare_graph(ir::specialize(graph_, sizes), input_strides_,
                                             disabled);
      const target::Target target = target::host_cpu(options_.num_threads);
      codegen::emit_cpp(schedule_program(prepared.graph, prepared.strides, target, disabled),
                        options_, target);
      size_choices_.replay();
      return;
    } catch (const Error&) {  // not sizes this graph takes: smaller ones
    }
  }
}

void SizeGenericGraph::build_generic_library(const Emitted& hint) {
  tried_generic_ = true;
  if (!sched::compiled_loops(hint.program).empty()) {
    no_generic_ = "its loops run as whole compiled functions";
    return;
  }
  std::vector<codegen::CppSource> probes;
  for (const std::vector<int64_t>& probe : probe_sizes(graph_.symbol_hints())) {
    try {
      probes.push_back(emit(probe).source);
    } catch (const Error&) {  // sizes the graph does not take (past a table's length): skip
    }
  }
  std::optional<codegen::SizeGenericSource> generic =
      codegen::size_generic_source(hint.source, probes, no_generic_);
  if (!generic) return;
  if (!no_generic_.empty())
    api::log(LogChannel::Recompiles, "size-generic code of a graph with size symbols, without " +
                                         no_generic_);
  no_generic_.clear();
  // A generic source the compiler refuses (a table read where C++ wanted a constant that the
  // rules above did not know) is no failure of the call: each size compiles its own.
  try {
    load_generic_library(*generic, hint);
  } catch (const Error& error) {
    no_generic_ = std::string("the size-generic source did not build: ") + error.what();
  }
}

void SizeGenericGraph::load_generic_library(codegen::SizeGenericSource& generic,
                                            const Emitted& hint) {
  const target::Target target = target::host_cpu(options_.num_threads);
  codegen::SourceFile file =
      codegen::lay_out_units(generic.prefix, generic.pieces,
                             codegen::parallel_unit_bytes(generic.pieces, target.threads));
  check_source_size(file, hint.prepared.graph);
  const std::string key = compile_key("size-generic\n" + file.text, {}, options_, target,
                                      cpu_disabled_passes());
  runtime::DiskCache cache = runtime::DiskCache::open(options_.cache_dir, options_.disk_cache);
  runtime::CachedObject object = cache.get_or_build(
      key, [&] { return file.text; },
      [&](const std::string& source_path, const std::string& object_path) {
        runtime::Toolchain::system().compile_shared_object(source_path, object_path, file.units,
                                                           target.threads);
      });
  if (!object.hit) ++compiles_;
  api::log(LogChannel::Cache, std::string(object.hit ? "hit " : "miss ") + key + " -> " +
                                  object.path + " (size-generic)");
  library_ = runtime::SharedLibrary::open(object.path);
  library_path_ = cache.source_path(key);
  generic_ = std::move(generic);
}

std::shared_ptr<CompiledGraph> SizeGenericGraph::on_generic_library(
    Emitted emitted, const std::vector<int64_t>& sizes, std::string& why) {
  const target::Target target = target::host_cpu(options_.num_threads);
  runtime::ExecutionSettings settings = execution_settings(
      options_, target, emitted.prepared,
      library_path_.substr(0, library_path_.find_last_of('/')) + "/autotune" +
          std::accumulate(sizes.begin(), sizes.end(), std::string(),
                          [](std::string text, int64_t size) {
                            return std::move(text) + "-" + std::to_string(size);
                          }) +
          ".txt");
  std::optional<std::vector<int64_t>> table =
      codegen::size_table(*generic_, emitted.source, why);
  if (!table) return nullptr;
  settings.size_table = std::move(*table);
  auto result = std::make_shared<CompiledGraph>();
  result->graph = std::move(emitted.prepared.graph);
  result->graph_text = std::move(emitted.prepared.graph_text);
  result->source_path = library_path_;
  result->executable = std::make_unique<runtime::HostExecutable>(
      std::move(emitted.program), std::move(emitted.source.kernels), library_, checks_,
      std::move(settings));
  return result;
}

std::shared_ptr<CompiledGraph> SizeGenericGraph::for_sizes(const std::vector<int64_t>& sizes) {
  auto known = by_sizes_.find(sizes);
  if (known != by_sizes_.end()) return known->second;
  std::optional<Emitted> hint;
  if (options_.device != "cpu" && !tried_generic_) {  // the size-generic code is C++ for the CPU
    tried_generic_ = true;
    no_generic_ = "each size's GPU kernels compile on their own (NVRTC)";
  }
  if (!tried_generic_) {  // the first call: the hints' code, and the generic library from it
    record_size_choices();
    hint = emit(graph_.symbol_hints());
    if (!size_choices_.replayed_all()) {  // the large sizes' program has another structure
      size_choices_ = ir::SizeChoices(ir::SizeChoices::Mode::Record);
      hint = emit(graph_.symbol_hints());  // the hints' own choices, recorded
      size_choices_.replay();
    }
    hint_program_ = hint->program;  // the choices the other sizes follow
    build_generic_library(*hint);
  }
  Emitted emitted = hint && sizes == graph_.symbol_hints() ? std::move(*hint) : emit(sizes);
  std::string why = no_generic_;
  std::shared_ptr<CompiledGraph> found;
  if (generic_) found = on_generic_library(std::move(emitted), sizes, why);
  if (!found) {
    if (api::log_enabled(LogChannel::Recompiles)) {
      api::log(LogChannel::Recompiles, "a graph with size symbols compiles for " +
                                           sizes_text(sizes) + " (no size-generic code: " + why +
                                           ")");
    }
    CompileStats stats;
    found = compile_graph(ir::specialize(graph_, sizes), input_strides_, options_, stats, checks_);
    compiles_ += stats.disk_misses;
  }
  // Each size keeps its program and intermediates: a graph called at ever new sizes (a server's
  // sequence lengths) drops some (rebuilt in milliseconds on the generic code when asked again).
  if (by_sizes_.size() >= kKeptSizes) by_sizes_.erase(by_sizes_.begin());
  by_sizes_[sizes] = found;
  return found;
}

}  // namespace kiln::detail
