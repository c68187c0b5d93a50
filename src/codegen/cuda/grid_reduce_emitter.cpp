// Reductions of the CUDA emitter that span blocks or a block's columns: split reductions (the
// grid folds, the last block merges), column tiles (a warp's lanes take columns) and split
// iterations (an iteration's elements shared by several blocks). One thread's and a block's
// are reduce_emitter.cpp's.
#include <algorithm>
#include <functional>

#include "codegen/cuda/kernel_emitter.h"

namespace kiln::codegen::cuda_detail {

// The scalar fields of an accumulation's state, each kept in a scratch array of one slot per
// block by a split reduction: (expression of the accumulator, C type).
std::vector<std::pair<std::string, std::string>> CudaKernelEmitter::state_fields(
    const sched::Accumulation& a) const {
  std::string acc = accumulator(a), t = compute_type(a.dtype);
  switch (ir::op_info(a.op).accumulator) {
    case ir::Accumulator::Welford:  // double, as accumulator_type
      return {{acc + ".count", "double"}, {acc + ".mean", "double"}, {acc + ".m2", "double"}};
    case ir::Accumulator::ArgIndex:
      return {{acc, t}, {acc + "_index", "int64_t"}};
    default:
      return {{acc, t}};
  }
}

// A split reduction (LaunchKind::SplitReduce): the grid folds the leading reductions, each block
// leaves its partial states in the scratch arrays, and the last block to finish (a ticket
// counter, as CUDA's threadFenceReduction sample) merges them and runs the rest of the body.
void CudaKernelEmitter::split_reduce(const std::vector<Stmt>& body) {
  const std::vector<Stmt> leading(body.begin(), body.begin() + plan_.split_statements);
  for (const Stmt& s : leading) declare_accumulators(s);
  for (const Stmt& s : leading) {
    line("{");
    open_block();
    fold_elements(s, "blockIdx.x * (int64_t)" + threads() + " + threadIdx.x",
                  "(int64_t)gridDim.x * " + threads());
    state_from_fold(s);
    block_combine(s);
    close_block();
  }
  merge_block_splits(leading);
  for (const Stmt& s : leading) finish(s);
  cooperative(std::vector<Stmt>(body.begin() + plan_.split_statements, body.end()));
}


// LaunchKind::ColumnTiles: lane k of every warp takes outer iteration 32 * tile + k (clamped to
// the last one past the end; those lanes store nothing), warp w the rows w, w + 8, ... of the
// flattened reduction loops (with split blocks: the rows of its block's share), so each warp
// load is one contiguous run of 32 elements.
void CudaKernelEmitter::column_tiles(const std::vector<Stmt>& body) {
  const std::vector<Stmt> leading(body.begin(), body.begin() + plan_.split_statements);
  const int rows = plan_.threads / kWarp;
  const std::string tiles = std::to_string(plan_.column_tiles);
  const bool split = plan_.block_splits > 1;
  if (split) {  // one tile and share per block: the last block of a tile may return early
    line("{");
    open_block();
    line("const int64_t kiln_tile = blockIdx.x % " + tiles + ";");
    line("const int64_t kiln_split = blockIdx.x / " + tiles + ";");
  } else {
    line("for (int64_t kiln_tile = " + block_index() + "; kiln_tile < " + tiles + "; kiln_tile += " + grid_blocks() + ") {");
    open_block();
  }
  line("const int64_t kiln_column = kiln_tile * " + std::to_string(kWarp) + " + (threadIdx.x & 31);");
  line("const int kiln_row = threadIdx.x >> 5;");
  line("const bool kiln_live = kiln_column < " + std::to_string(plan_.iterations) + ";");
  line("const int64_t kiln_flat = kiln_live ? kiln_column : " +
       std::to_string(plan_.iterations - 1) + ";");
  flattened_chain("kiln_flat");
  const std::string first = split ? "kiln_split * " + std::to_string(rows) + " + kiln_row"
                                  : "(int64_t)kiln_row";
  const std::string step = std::to_string(int64_t(rows) * plan_.block_splits);
  for (const Stmt& s : leading) declare_accumulators(s);
  // The rows column_combine merges through, declared once for both of its uses (the block's
  // combine and the split blocks' merge): each __shared__ declaration takes its own memory.
  for (const Stmt& s : leading)
    for (const sched::Accumulation& a : s.accumulations) {
      const std::string acc = accumulator(a), rows_text = std::to_string(rows);
      line("__shared__ " + accumulator_type(a) + " " + acc + "_rows[" + rows_text + "][32];");
      if (has_index(a)) line("__shared__ int64_t " + acc + "_index_rows[" + rows_text + "][32];");
    }
  for (const Stmt& s : leading) {
    line("{");
    open_block();
    fold_elements(s, first, step);
    state_from_fold(s);
    column_combine(s);
    close_block();
  }
  if (split) merge_block_splits(leading);
  for (const Stmt& s : leading) finish(s);
  line("if (kiln_row == 0 && kiln_live) {");
  open_block();
  statements(std::vector<Stmt>(body.begin() + plan_.split_statements, body.end()));
  close_block();
  close_block();
}

// A column's accumulators combined across the block's warps through shared memory (the rows
// column_tiles declares); every thread of the column ends with the block's value.
void CudaKernelEmitter::column_combine(const Stmt& s) {
  const std::string rows = std::to_string(plan_.threads / kWarp);
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line(acc + "_rows[kiln_row][threadIdx.x & 31] = " + acc + ";");
    if (has_index(a)) line(acc + "_index_rows[kiln_row][threadIdx.x & 31] = " + acc + "_index;");
  }
  line(block_barrier());
  line("if (kiln_row == 0) {");
  open_block();
  line("for (int kiln_other_row = 1; kiln_other_row < " + rows + "; ++kiln_other_row) {");
  open_block();
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a), other = acc + "_other";
    line("const " + accumulator_type(a) + " " + other + " = " + acc +
         "_rows[kiln_other_row][threadIdx.x & 31];");
    if (has_index(a))
      line("const int64_t " + other + "_index = " + acc + "_index_rows[kiln_other_row][threadIdx.x & 31];");
    merge(a, acc, other);
  }
  close_block();
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line(acc + "_rows[0][threadIdx.x & 31] = " + acc + ";");
    if (has_index(a)) line(acc + "_index_rows[0][threadIdx.x & 31] = " + acc + "_index;");
  }
  close_block();
  line(block_barrier());
  for (const sched::Accumulation& a : s.accumulations) {
    std::string acc = accumulator(a);
    line(acc + " = " + acc + "_rows[0][threadIdx.x & 31];");
    if (has_index(a)) line(acc + "_index = " + acc + "_index_rows[0][threadIdx.x & 31];");
  }
  line(block_barrier());  // the next tile or statement writes the same slots
}

// BlockPerIteration with split blocks: block b takes iteration b % iterations and share
// b / iterations of its reductions' elements; the last block of the iteration stores.
void CudaKernelEmitter::split_iterations(const std::vector<Stmt>& body) {
  const std::vector<Stmt> leading(body.begin(), body.begin() + plan_.split_statements);
  const std::string iterations = std::to_string(plan_.iterations);
  line("{");
  open_block();
  line("const int64_t kiln_flat = blockIdx.x % " + iterations + ";");
  line("const int64_t kiln_split = blockIdx.x / " + iterations + ";");
  flattened_chain("kiln_flat");
  for (const Stmt& s : leading) declare_accumulators(s);
  for (const Stmt& s : leading) {
    line("{");
    open_block();
    if (nests_over_threads(s))  // the blocks share the outermost loop, the threads the last
      fold_elements(s, "threadIdx.x", threads(), "kiln_split", std::to_string(plan_.block_splits));
    else
      fold_elements(s, "kiln_split * " + threads() + " + threadIdx.x",
                    std::to_string(int64_t(plan_.threads) * plan_.block_splits));
    state_from_fold(s);
    block_combine(s);
    close_block();
  }
  merge_block_splits(leading);
  for (const Stmt& s : leading) finish(s);
  line("if (threadIdx.x == 0) {");
  open_block();
  statements(std::vector<Stmt>(body.begin() + plan_.split_statements, body.end()));
  close_block();
  close_block();
}

// Split blocks (LaunchPlan::block_splits, and SplitReduce's whole grid as one group): each
// block leaves its partial states (a tile's: one per lane) in the scratch slots of (group,
// split), and the last block of the group to finish (a ticket counter per group, as CUDA's
// threadFenceReduction sample) merges them; every thread ends with the group's states.
void CudaKernelEmitter::merge_block_splits(const std::vector<Stmt>& leading) {
  const bool columns = plan_.kind == LaunchKind::ColumnTiles;
  const bool whole_grid = plan_.kind == LaunchKind::SplitReduce;
  const std::string group = columns ? "kiln_tile" : whole_grid ? "0" : "kiln_flat";
  const std::string split = whole_grid ? "blockIdx.x" : "kiln_split";
  const std::string splits = whole_grid ? "gridDim.x" : std::to_string(plan_.block_splits);
  const std::string lanes = std::to_string(split_lanes(plan_));
  const std::string lane = columns ? " + (threadIdx.x & 31)" : "";
  const std::string slots_per_field =
      whole_grid ? "(int64_t)gridDim.x"
                 : std::to_string(split_groups(plan_) * plan_.block_splits * split_lanes(plan_));
  auto slot = [&](const std::string& part) {
    return "(" + group + " * " + splits + " + " + part + ") * " + lanes + lane;
  };
  line("unsigned int* const kiln_tickets = (unsigned int*)kiln_scratch;");
  int field = 0;
  std::vector<std::string> slots, slot_types;  // by field, in order
  for (const Stmt& s : leading)
    for (const sched::Accumulation& a : s.accumulations)
      for (const auto& [expression, type] : state_fields(a)) {
        std::string name = "kiln_slots" + std::to_string(field);
        line("volatile " + type + "* const " + name + " = (volatile " + type + "*)(kiln_scratch + " +
             std::to_string(split_ticket_bytes(plan_)) + " + " + std::to_string(8 * field) +
             " * " + slots_per_field + ");");
        line("if (" + std::string(columns ? "kiln_row" : "threadIdx.x") + " == 0) " + name + "[" +
             slot(split) + "] = " + expression + ";");
        slots.push_back(name);
        slot_types.push_back(type);
        ++field;
      }
  line("__threadfence();");
  line(block_barrier());
  line("__shared__ bool kiln_last_block;");
  line("if (threadIdx.x == 0) kiln_last_block = atomicAdd(kiln_tickets + " + group + ", 1u) == " +
       splits + " - 1u;");
  line(block_barrier());
  line("if (!kiln_last_block) return;");
  line("__threadfence();");
  line("if (threadIdx.x == 0) kiln_tickets[" + group + "] = 0;  // ready for the next launch");
  field = 0;
  for (const Stmt& s : leading) {
    line("{");
    open_block();
    const int first_field = field;
    for (const sched::Accumulation& a : s.accumulations) {
      line(accumulator(a) + " = " + identity(a) + ";");
      if (has_index(a)) line(accumulator(a) + "_index = -1;");
    }
    // The parts in batches: a batch's loads all issue before its merges, one round trip to L2
    // per batch where each merge waited for its own load (resnet18's first batch-norm
    // statistics, 196 parts a column tile: 15.0 to 12.0 us on an H200).
    const std::string step = std::to_string(columns ? plan_.threads / kWarp : plan_.threads);
    const std::string batch = std::to_string(kPartsPerBatch);
    line("for (int64_t kiln_batch = " + std::string(columns ? "kiln_row" : "threadIdx.x") +
         "; kiln_batch < " + splits + "; kiln_batch += " + step + " * " + batch + ") {");
    open_block();
    int last_field = first_field;
    for (const sched::Accumulation& a : s.accumulations)
      last_field += static_cast<int>(state_fields(a).size());
    for (int f = first_field; f < last_field; ++f)
      line(slot_types[static_cast<size_t>(f)] + " kiln_loaded" + std::to_string(f) + "[" + batch + "];");
    line("#pragma unroll");
    line("for (int kiln_b = 0; kiln_b < " + batch + "; ++kiln_b) {");
    open_block();
    line("const int64_t kiln_part = kiln_batch + kiln_b * " + step + ";");
    line("if (kiln_part < " + splits + ") {");
    open_block();
    for (int f = first_field; f < last_field; ++f)
      line("kiln_loaded" + std::to_string(f) + "[kiln_b] = " + slots[static_cast<size_t>(f)] +
           "[" + slot("kiln_part") + "];");
    close_block();
    close_block();
    // Then merged as a tree: a batch's parts pairwise, their results pairwise, ... and the last
    // into the running state, so that a batch's chain of dependent merges (a Welford merge
    // divides) is 4 long, not 8: resnet18's first batch-norm statistics (196 parts a column
    // tile) 10.8 to 10.4 us on an H200. Most of the rest of the last block's time is its loads
    // of the parts' states (the kernel without a last block: 4.85 us).
    for (int b = 0; b < kPartsPerBatch; ++b) {
      const std::string part = "kiln_batch + " + std::to_string(b) + " * " + step;
      field = first_field;
      for (const sched::Accumulation& a : s.accumulations) {
        const std::string acc = accumulator(a), mine = part_state(a, b);
        line(accumulator_type(a) + " " + mine + " = " + identity(a) + ";");
        if (has_index(a)) line("int64_t " + mine + "_index = -1;");
        std::string loads;
        for (const auto& [expression, type] : state_fields(a))
          loads += mine + expression.substr(acc.size()) + " = kiln_loaded" +
                   std::to_string(field++) + "[" + std::to_string(b) + "]; ";
        line("if (" + part + " < " + splits + ") { " + loads + "}");
      }
    }
    for (int width = kPartsPerBatch / 2; width >= 1; width /= 2)
      for (int b = 0; b < width; ++b)
        for (const sched::Accumulation& a : s.accumulations)
          merge(a, part_state(a, b), part_state(a, b + width));
    for (const sched::Accumulation& a : s.accumulations)
      merge(a, accumulator(a), part_state(a, 0));
    close_block();
    if (columns)
      column_combine(s);
    else
      block_combine(s);
    close_block();
  }
}

}  // namespace kiln::codegen::cuda_detail
