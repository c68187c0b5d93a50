#include "api/size_generic_graph.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "api/logging.h"
#include "api/options.h"
#include "codegen/cpp/translation_units.h"
#include "ir/specialize.h"
#include "runtime/cuda/cuda_executable.h"
#include "runtime/disk_cache.h"
#include "runtime/toolchain.h"

namespace kiln::detail {
namespace {

using api::LogChannel;

// The sizes a graph keeps compiled: a decoder's steps (a few MB each: GPT-2 small's) through a
// few hundred tokens, and intermediates of at most 512 MiB in all (a long prompt's scores).
constexpr size_t kKeptSizes = 256;
constexpr int64_t kKeptArenaBytes = int64_t(512) << 20;

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

// The sizes the choices are made at: each symbol at least `least`, odd (a choice that whole
// vectors bound, a GPU's 16-byte accesses, is then made as any size allows it, and a size may
// follow it), symbols with equal hints equal and the others apart (two equal sizes make
// another program: a batch and a length of 1024 share their aranges).
std::vector<int64_t> choice_sizes(const std::vector<int64_t>& hints, int64_t least) {
  std::map<int64_t, int64_t> of_hint;
  std::set<int64_t> taken;
  std::vector<int64_t> sizes;
  for (int64_t hint : hints) {
    auto found = of_hint.find(hint);
    if (found == of_hint.end()) {
      int64_t size = std::max(hint, least) | 1;
      while (taken.count(size)) size += 2;
      taken.insert(size);
      found = of_hint.emplace(hint, size).first;
    }
    sizes.push_back(found->second);
  }
  return sizes;
}

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::string text;
  for (size_t k = 0; k < sizes.size(); ++k)
    text += (k ? ", s" : "s") + std::to_string(k) + " = " + std::to_string(sizes[k]);
  return text;
}

}  // namespace

SizeGenericGraph::SizeGenericGraph(ir::Graph graph, std::vector<std::vector<int64_t>> input_strides,
                                   Options options, std::vector<runtime::RuntimeCheck> checks,
                                   std::optional<target::Target> target)
    : graph_(std::move(graph)), input_strides_(std::move(input_strides)),
      options_(std::move(options)), checks_(std::move(checks)), target_(target) {}

// Where the size choices are made: each symbol at least this (a sequence length, a batch).
constexpr int64_t kChoiceSize = 1024;

codegen::SourcePieces SizeGenericGraph::pieces(const Emitted& emitted) const {
  return on_gpu() ? codegen::SourcePieces(emitted.cuda_source) : codegen::SourcePieces(emitted.source);
}

SizeGenericGraph::Emitted SizeGenericGraph::emit_unscoped(const std::vector<int64_t>& sizes,
                                                          const sched::Program* decisions) {
  const std::set<std::string> disabled = on_gpu() ? disabled_passes() : cpu_disabled_passes();
  Emitted emitted;
  const ir::Graph specialized = ir::specialize(graph_, sizes);
  emitted.prepared = prepare_graph(specialized, input_strides_, disabled, &pass_record_);
  try {
    emitted.program = schedule_program(emitted.prepared.graph, emitted.prepared.strides,
                                       *target_, disabled, options_.donated, checks_.size(),
                                       decisions);
  } catch (const Error&) {
    if (!pass_record_.replaying) throw;
    emitted.prepared = prepare_graph(specialized, input_strides_, disabled);  // all the passes
    emitted.program = schedule_program(emitted.prepared.graph, emitted.prepared.strides,
                                       *target_, disabled, options_.donated, checks_.size(),
                                       decisions);
  }
  if (on_gpu())
    emitted.cuda_source = codegen::emit_cuda(emitted.program, options_, *target_);
  else
    emitted.source = codegen::emit_cpp(emitted.program, options_, *target_);
  return emitted;
}

SizeGenericGraph::Emitted SizeGenericGraph::emit(const std::vector<int64_t>& sizes) {
  if (size_choices_.mode() == ir::SizeChoices::Mode::Replay) size_choices_.replay();
  ir::SizeChoiceScope scope(&size_choices_);
  return emit_unscoped(sizes, hint_program_ ? &*hint_program_ : nullptr);
}

// Records the choices at large sizes; sizes the graph does not take (a position table shorter
// than 1024) fall back to smaller ones (128, 32), then to the hints.
void SizeGenericGraph::record_size_choices() {
  const std::vector<int64_t>& hints = graph_.symbol_hints();
  for (int64_t least : {kChoiceSize, kChoiceSize / 8, kChoiceSize / 32, int64_t(0)}) {
    std::vector<int64_t> sizes = least > 0 ? choice_sizes(hints, least) : hints;
    size_choices_ = ir::SizeChoices(ir::SizeChoices::Mode::Record);
    ir::SizeChoiceScope scope(&size_choices_);
    try {
      emit_unscoped(sizes);
      size_choices_.replay();
      choice_sizes_ = sizes;
      return;
    } catch (const Error&) {  // not sizes this graph takes: smaller ones
    }
  }
}

void SizeGenericGraph::make_generic_source() {
  if (tried_generic_) return;
  tried_generic_ = true;
  if (!target_)
    target_ = options_.device == "cuda" ? cuda_target() : target::host_cpu(options_.num_threads);
  if (on_gpu() && api::mode_settings(options_.mode).autotune) {
    no_generic_ = "max-autotune times each size's own GPU kernels";
    return;
  }
  record_size_choices();
  hint_ = emit(graph_.symbol_hints());
  if (!size_choices_.replayed_all()) {  // the large sizes' program has another structure
    choices_at_hints_ = size_choices_.unreplayed();
    api::log(LogChannel::Recompiles, "a graph with size symbols makes its size choices at its "
                                     "hints: the program at large sizes has another structure "
                                     "(" + choices_at_hints_ + ")");
    size_choices_ = ir::SizeChoices(ir::SizeChoices::Mode::Record);
    hint_ = emit(graph_.symbol_hints());  // the hints' own choices, recorded
    size_choices_.replay();
  }
  hint_program_ = hint_->program;  // the choices the other sizes follow
  pass_record_.replaying = true;    // and the passes
  if (!on_gpu() && !sched::compiled_loops(hint_->program).empty()) {
    no_generic_ = "its loops run as whole compiled functions";
    return;
  }
  // The sizes the choices were made at probe too: the integers that follow the sizes only
  // from afar (a split's count of blocks) differ there.
  std::vector<std::vector<int64_t>> probes_at = probe_sizes(graph_.symbol_hints());
  if (choice_sizes_ != graph_.symbol_hints()) probes_at.push_back(choice_sizes_);
  std::vector<codegen::SourcePieces> probes;
  for (const std::vector<int64_t>& probe : probes_at) {
    try {
      probes.push_back(pieces(emit(probe)));
    } catch (const Error&) {  // sizes the graph does not take (past a table's length): skip
    }
  }
  generic_ = codegen::size_generic_source(pieces(*hint_), probes, no_generic_);
  if (!generic_) return;
  if (!no_generic_.empty())
    api::log(LogChannel::Recompiles, "size-generic code of a graph with size symbols, without " +
                                         no_generic_);
  no_generic_.clear();
}

const codegen::SizeGenericSource* SizeGenericGraph::generic_source(std::string& why) {
  make_generic_source();
  why = no_generic_;
  return generic_ ? &*generic_ : nullptr;
}

std::optional<std::vector<int64_t>> SizeGenericGraph::size_table(
    const std::vector<int64_t>& sizes, std::string& why) {
  if (generic_source(why) == nullptr) return std::nullopt;
  return codegen::size_table(*generic_, pieces(emit(sizes)), why);
}

void SizeGenericGraph::load_generic_library(const Emitted& hint) {
  codegen::SourceFile file =
      codegen::lay_out_units(generic_->prefix, generic_->pieces,
                             codegen::parallel_unit_bytes(generic_->pieces, target_->threads));
  check_source_size(file, hint.prepared.graph);
  const std::string key = compile_key("size-generic\n" + file.text, {}, options_, *target_,
                                      cpu_disabled_passes());
  runtime::DiskCache cache = runtime::DiskCache::open(options_.cache_dir, options_.disk_cache);
  runtime::CachedObject object = cache.get_or_build(
      key, [&] { return file.text + key_marker_source(key, false); },
      [&](const std::string& source_path, const std::string& object_path) {
        runtime::Toolchain::system().compile_shared_object(source_path, object_path, file.units,
                                                           target_->threads);
      });
  if (!object.hit) ++compiles_;
  api::log(LogChannel::Cache, std::string(object.hit ? "hit " : "miss ") + key + " -> " +
                                  object.path + " (size-generic)");
  // Unloaded when too many libraries are loaded (runtime/shared_library.h): its source is kept
  // to rebuild it should its cache entry be gone by the next run.
  auto source = std::make_shared<const std::string>(file.text + key_marker_source(key, false));
  runtime::SharedLibrary::Reloader reloader = [options = options_, threads = target_->threads,
                                               units = file.units, key,
                                               source](const sched::Program*) {
    runtime::DiskCache cache = runtime::DiskCache::open(options.cache_dir, options.disk_cache);
    return cache.get_or_build(
        key, *source, [&](const std::string& source_path, const std::string& object_path) {
          runtime::Toolchain::system().compile_shared_object(source_path, object_path, units,
                                                             threads);
        });
  };
  library_ = runtime::SharedLibrary::open(object, std::move(reloader)).library;
  library_path_ = cache.source_path(key);
}

void SizeGenericGraph::load_generic_modules() {
  codegen::CudaSource source;
  source.header = generic_->prefix;
  source.functions = generic_->pieces;
  const std::string key = compile_key("size-generic\n" + generic_->text(), {}, options_,
                                      *target_, disabled_passes());
  runtime::DiskCache cache = runtime::DiskCache::open(options_.cache_dir, options_.disk_cache);
  CudaModules built = build_cuda_modules(source, key, cache, *target_);
  if (!built.all_hit) ++compiles_;
  api::log(LogChannel::Cache, std::string(built.all_hit ? "hit " : "miss ") + key + " -> " +
                                  built.source_path + " (size-generic)");
  modules_ = std::move(built.modules);
  library_path_ = built.source_path;
}

std::shared_ptr<CompiledGraph> SizeGenericGraph::on_generic_library(
    Emitted emitted, const std::vector<int64_t>& sizes, std::string& why) {
  std::optional<std::vector<int64_t>> table =
      codegen::size_table(*generic_, pieces(emitted), why);
  if (!table) return nullptr;
  auto result = std::make_shared<CompiledGraph>();
  result->graph = std::move(emitted.prepared.graph);
  result->source_path = library_path_;
  if (on_gpu()) {
    runtime::ExecutionSettings settings =
        execution_settings(options_, *target_, emitted.prepared, "");
    codegen::set_launch_sizes(*generic_, *table, emitted.cuda_source.kernels);
    result->executable = std::make_unique<runtime::CudaExecutable>(
        std::move(emitted.program), std::move(emitted.cuda_source.kernels), modules_, checks_,
        std::move(settings));
    return result;
  }
  runtime::ExecutionSettings settings = execution_settings(
      options_, *target_, emitted.prepared,
      library_path_.substr(0, library_path_.find_last_of('/')) + "/autotune" +
          std::accumulate(sizes.begin(), sizes.end(), std::string(),
                          [](std::string text, int64_t size) {
                            return std::move(text) + "-" + std::to_string(size);
                          }) +
          ".txt");
  settings.size_table = std::move(*table);
  result->executable = std::make_unique<runtime::HostExecutable>(
      std::move(emitted.program), std::move(emitted.source.kernels), library_, checks_,
      std::move(settings));
  return result;
}

std::shared_ptr<CompiledGraph> SizeGenericGraph::for_sizes(const std::vector<int64_t>& sizes) {
  std::lock_guard<std::mutex> lock(for_sizes_mutex_);
  auto known = by_sizes_.find(sizes);
  if (known != by_sizes_.end()) {
    known->second.last_use = ++uses_;
    return known->second.compiled;
  }
  make_generic_source();
  if (generic_ && !library_ && modules_.empty()) {
    // A generic source the compiler refuses (a table read where C++ wanted a constant that the
    // rules of size_parameters.cpp did not know) is no failure of the call: each size
    // compiles its own.
    try {
      if (on_gpu())
        load_generic_modules();
      else
        load_generic_library(*hint_);
    } catch (const Error& error) {
      if (error.kind() == ErrorKind::Interrupted) throw;  // the user's, not the source's
      generic_.reset();
      no_generic_ = std::string("the size-generic source did not build: ") + error.what();
    }
  }
  std::optional<Emitted> hint = std::move(hint_);  // the hints' code serves their first call
  hint_.reset();
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
  keep(sizes, found);
  return found;
}

void SizeGenericGraph::keep(const std::vector<int64_t>& sizes,
                            std::shared_ptr<CompiledGraph> compiled) {
  const int64_t bytes = compiled->executable ? compiled->executable->program().arena_bytes : 0;
  while (!by_sizes_.empty() &&
         (by_sizes_.size() >= kKeptSizes || kept_arena_bytes_ + bytes > kKeptArenaBytes)) {
    auto oldest = std::min_element(by_sizes_.begin(), by_sizes_.end(), [](const auto& a, const auto& b) {
      return a.second.last_use < b.second.last_use;
    });
    kept_arena_bytes_ -= oldest->second.arena_bytes;
    by_sizes_.erase(oldest);
  }
  kept_arena_bytes_ += bytes;
  by_sizes_[sizes] = Kept{std::move(compiled), bytes, ++uses_};
}

}  // namespace kiln::detail
