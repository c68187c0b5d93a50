// ScanTiles launches (kernel_emitter.h): a long scan in one launch, as CUB's single-pass scan.
// Block b takes tile t (a ticket: tiles start in order) of kScanTile elements: thread (warp w,
// lane l) holds element j * kScanThreads + w * 32 + l of it for each j < kScanItems, so every
// load and store of a warp is one contiguous run. Warps scan their runs with shuffles; warp 0
// scans the 64 run totals, publishes the tile's total and looks back over the tiles before it
// for their combination (kiln_look_back, cuda_prelude.h); every element then adds its run's
// and its tile's prefix. Loads once, stores once: a 16M-element cumsum ran on one thread.
#include "codegen/cuda/kernel_emitter.h"

namespace kiln::codegen::cuda_detail {

void CudaKernelEmitter::scan_tiles(const Stmt& s) {
  const sched::Accumulation& a = s.accumulations[0];
  const std::string type = compute_type(a.dtype);
  const std::string combine = "kiln_combine_" + std::string(ir::op_info(a.op).name);
  const std::string identity_value = identity(a);
  const std::string items = std::to_string(kScanItems), threads = std::to_string(kScanThreads);
  const std::string tiles = std::to_string(scan_tile_count(plan_));
  const std::string extent = std::to_string(s.reduce_loops[0].extent);
  const std::string v = loop_name(s.reduce_loops[0].variable);
  const int warps = kScanThreads / kWarp;
  line("int* const kiln_counts = (int*)kiln_scratch;  // tiles taken, tiles finished");
  line("volatile int* const kiln_flags = (volatile int*)(kiln_scratch + 16);");
  line("volatile " + type + "* const kiln_totals = (volatile " + type + "*)(kiln_scratch + " +
       std::to_string(scan_flag_bytes(plan_)) + ");");
  line("volatile " + type + "* const kiln_inclusive = (volatile " + type + "*)(kiln_scratch + " +
       std::to_string(scan_flag_bytes(plan_) + 8 * scan_tile_count(plan_)) + ");");
  line("__shared__ long long kiln_tile_shared;");
  line("__shared__ " + type + " kiln_runs[" + std::to_string(kScanItems * warps) + "];");
  line("__shared__ " + type + " kiln_tile_prefix;");
  line("__shared__ bool kiln_last_tile;");
  line("if (threadIdx.x == 0) kiln_tile_shared = atomicAdd(kiln_counts, 1);");
  line(block_barrier());
  line("const long long kiln_tile = kiln_tile_shared;");
  line("const int kiln_lane = threadIdx.x & 31, kiln_warp = threadIdx.x >> 5;");
  line("auto kiln_combine = [](" + type + " x, " + type + " y) { return " + combine + "(x, y); };");
  line(type + " kiln_items[" + items + "];");
  // Each element's value, then a shuffle scan of each warp's run of 32.
  line("#pragma unroll");
  line("for (int kiln_j = 0; kiln_j < " + items + "; ++kiln_j) {");
  open_block();
  line("const int64_t " + v + " = kiln_tile * " + std::to_string(kScanTile) + " + kiln_j * " +
       threads + " + threadIdx.x;");
  line(type + " kiln_x = " + identity_value + ";");
  line("if (" + v + " < " + extent + ") {");
  open_block();
  statements(s.body);
  line("kiln_x = " + convert(value(a.value), expr(a.value).dtype, a.dtype) + ";");
  close_block();
  line("#pragma unroll");
  line("for (int kiln_delta = 1; kiln_delta < 32; kiln_delta <<= 1) {");
  open_block();
  line("const " + type + " kiln_before = kiln_shuffle_up(kiln_x, kiln_delta);");
  line("if (kiln_lane >= kiln_delta) kiln_x = kiln_combine(kiln_before, kiln_x);");
  close_block();
  line("kiln_items[kiln_j] = kiln_x;");
  line("if (kiln_lane == 31) kiln_runs[kiln_j * " + std::to_string(warps) + " + kiln_warp] = kiln_x;");
  close_block();
  line(block_barrier());
  // Warp 0: the runs' exclusive prefixes (two runs a lane), the tile's total and its prefix.
  line("if (kiln_warp == 0) {");
  open_block();
  line("const " + type + " kiln_first = kiln_runs[2 * kiln_lane], kiln_second = kiln_runs[2 * kiln_lane + 1];");
  line(type + " kiln_pair = kiln_combine(kiln_first, kiln_second);");
  line("#pragma unroll");
  line("for (int kiln_delta = 1; kiln_delta < 32; kiln_delta <<= 1) {");
  open_block();
  line("const " + type + " kiln_before = kiln_shuffle_up(kiln_pair, kiln_delta);");
  line("if (kiln_lane >= kiln_delta) kiln_pair = kiln_combine(kiln_before, kiln_pair);");
  close_block();
  line(type + " kiln_exclusive = kiln_shuffle_up(kiln_pair, 1);");
  line("if (kiln_lane == 0) kiln_exclusive = " + identity_value + ";");
  line("kiln_runs[2 * kiln_lane] = kiln_exclusive;");
  line("kiln_runs[2 * kiln_lane + 1] = kiln_combine(kiln_exclusive, kiln_first);");
  line("const " + type + " kiln_total = kiln_shuffle_from(kiln_pair, 31);");
  line(type + " kiln_prefix = " + identity_value + ";");
  line("if (kiln_tile == 0) {");
  open_block();
  line("if (kiln_lane == 0) { kiln_inclusive[0] = kiln_total; __threadfence(); kiln_flags[0] = 2; }");
  close_block();
  line("else {");
  open_block();
  line("if (kiln_lane == 0) { kiln_totals[kiln_tile] = kiln_total; __threadfence(); kiln_flags[kiln_tile] = 1; }");
  line("kiln_prefix = kiln_look_back(kiln_flags, kiln_totals, kiln_inclusive, kiln_tile, " +
       identity_value + ", kiln_combine);");
  line("if (kiln_lane == 0) {");
  open_block();
  line("kiln_inclusive[kiln_tile] = kiln_combine(kiln_prefix, kiln_total);");
  line("__threadfence();");
  line("kiln_flags[kiln_tile] = 2;");
  close_block();
  close_block();
  line("if (kiln_lane == 0) kiln_tile_prefix = kiln_prefix;");
  close_block();
  line(block_barrier());
  // Every element: its tile's prefix, its run's, its own inclusive value in the run.
  line("#pragma unroll");
  line("for (int kiln_j = 0; kiln_j < " + items + "; ++kiln_j) {");
  open_block();
  line("const int64_t " + v + " = kiln_tile * " + std::to_string(kScanTile) + " + kiln_j * " +
       threads + " + threadIdx.x;");
  line("if (" + v + " < " + extent + ") {");
  open_block();
  line("const " + type + " kiln_result = kiln_combine(kiln_combine(kiln_tile_prefix, kiln_runs[kiln_j * " +
       std::to_string(warps) + " + kiln_warp]), kiln_items[kiln_j]);");
  line(store_text(s.buffer, index_text(s.index), "kiln_result", a.dtype));
  close_block();
  close_block();
  // The last tile to finish leaves the scratch as it found it (no tile looks back any more).
  line(block_barrier());
  line("if (threadIdx.x == 0) {");
  open_block();
  line("__threadfence();");
  line("kiln_last_tile = atomicAdd(kiln_counts + 1, 1) == " + tiles + " - 1;");
  close_block();
  line(block_barrier());
  line("if (kiln_last_tile) {");
  open_block();
  line("for (int64_t kiln_t = threadIdx.x; kiln_t < " + tiles + "; kiln_t += " + threads + ") kiln_flags[kiln_t] = 0;");
  line("if (threadIdx.x == 0) { kiln_counts[0] = 0; kiln_counts[1] = 0; }");
  close_block();
}

}  // namespace kiln::codegen::cuda_detail
