// Sorts on the GPU: generated kernels for the Program's extern argsort and sort steps (np.sort,
// argsort, median and quantiles, np.unique, torch.sort and topk), which otherwise copy the
// operand to the host, sort it there (extern/sort.h) and copy the result back, a round trip
// and a wait for each (a loop of rows that sort: one each iteration; no CUDA graph).
//
// The order is extern/sort.h's, bit for bit: each element becomes an unsigned key (a signed
// integer's sign bit flipped; a float's bits sign-folded, both zeros the key of 0.0, every NaN
// the largest key; inverted for `descending`), and its position within the row breaks ties, so
// the order is total and the result is a stable sort's. What is written is each output
// position's element of that order: its position (argsort) or the input element there, its own
// bits (sort: -0.0 and NaN payloads as they were).
//
// A row of up to kBlockSortUpTo elements is sorted by one block in shared memory (a bitonic
// network over the row padded to a power of two), a block per row. Longer rows go through
// the workspace: a launch clears its counters, a launch counts every digit of every row, and a
// least-significant-digit radix sort of 8-bit digits orders the rows (a launch a digit, each
// tile placed by a look-back over the earlier tiles' counts; the first reads the operand, the
// last writes the result where it can, else a last launch does). An integer's or a bool's key is its bits, flipped: sorting the
// keys alone sorts the values. (Merging sorted tiles instead, in passes of binary searches, took
// 8.8 ms for 16M float32 on an H100, 16x CuPy's radix sort; three launches a digit, counts,
// their sums and the scatter, 1.63 ms; a launch a digit, 1.07 ms.)
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "codegen/cuda/kernel_emitter.h"
#include "codegen/cuda/radix_sort_text.h"
#include "ir/ops.h"

namespace kiln::codegen::cuda_detail {
namespace {

// (the newline after its last line starts kRadixSortText)
constexpr const char* kBlockSortText = R"(
// ---- sorts (codegen/cuda/sort_kernels.cpp) ----------------------------------------------
// A float's bits as a key of NumPy's order: negative values' bits inverted, positive ones'
// sign bit set, both zeros the key of 0.0, every NaN the largest key.
template <class B>
KILN_FN B kiln_sort_float_key(B bits, B sign, B infinity) {
  const B magnitude = (B)(bits & (B)~sign);
  if (magnitude > infinity) return (B)~(B)0;
  if (magnitude == 0) return sign;
  return (bits & sign) ? (B)~bits : (B)(bits | sign);
}
// The sort's total order: keys, then positions.
template <class K>
KILN_FN bool kiln_sort_before(K a, int position_a, K b, int position_b) {
  return a < b || (a == b && position_a < position_b);
}
// The barrier of the threads that sort: the block's, or (TEAM > 0) a device loop's first TEAM.
template <int TEAM>
KILN_FN void kiln_sort_barrier() {
  if constexpr (TEAM > 0) kiln_team_barrier(TEAM);
  else __syncthreads();
}
// Sorts P (a power of two) keys and positions in shared memory with the block's threads (or a
// device loop's first TEAM): a bitonic network, log2(P) (log2(P) + 1) / 2 rounds of
// compare-exchanges between barriers.
template <class K, int P, int TEAM>
KILN_FN void kiln_bitonic_sort(K* keys, int* positions) {
  for (int size = 2; size <= P; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      kiln_sort_barrier<TEAM>();
      for (int t = threadIdx.x; t < P / 2; t += (TEAM > 0 ? TEAM : blockDim.x)) {
        const int i = 2 * t - (t & (stride - 1)), j = i + stride;
        const K a = keys[i], b = keys[j];
        const int position_a = positions[i], position_b = positions[j];
        if (kiln_sort_before(b, position_b, a, position_a) == ((i & size) == 0)) {
          keys[i] = b, keys[j] = a;
          positions[i] = position_b, positions[j] = position_a;
        }
      }
    }
  kiln_sort_barrier<TEAM>();
})";
// Every sort kernel's device code, in the header once: the block sort's, then the radix sort's.
const std::string& sort_text() {
  static const std::string& text = *new std::string(std::string(kBlockSortText) + kRadixSortText);
  return text;
}

// Rows of up to this many elements sort in one block's shared memory (8-byte keys and 4-byte
// positions: 24 KiB); longer rows by the radix sort, in tiles of radix_items(p) a thread.
constexpr int64_t kBlockSortUpTo = 2048;
constexpr int kRadixThreads = 256;                  // kiln_radix_threads
constexpr int64_t kLargestRadixTile = 256 * 16;     // (a row's int positions stay below 2^31)
constexpr int64_t kDigits = 256;
constexpr int kMostSortThreads = 512;
constexpr int kPassThreads = 256;
constexpr int64_t kMostBlocks = int64_t{1} << 24;

// A sort step as the kernels see it: the input view, the output buffer, and the order.
struct SortProblem {
  DType dtype = DType::Float32;
  bool positions = false, descending = false;
  int64_t axis = 0, n = 0, out_n = 0, rows = 1, offset = 0;
  std::vector<int64_t> shape, in_strides, out_strides;  // of the input; the output's
  std::vector<int64_t> picks;                           // out position j: picks[j] of the order
};

std::optional<SortProblem> sort_problem(const sched::ExternCall& call,
                                        const std::vector<sched::Buffer>& buffers) {
  if (!ir::is_sort(call.op) || call.inputs.size() != 1 || call.parameters.size() < 2)
    return std::nullopt;
  const sched::Buffer& in = buffers[static_cast<size_t>(call.inputs[0])];
  const sched::Buffer& out = buffers[static_cast<size_t>(call.output)];
  SortProblem p;
  p.dtype = in.dtype;
  if (is_complex(p.dtype)) return std::nullopt;
  p.positions = call.op == ir::Op::argsort;
  p.descending = call.parameters[1] != 0;
  p.picks.assign(call.parameters.begin() + 2, call.parameters.end());
  p.shape = in.shape, p.in_strides = in.strides;
  if (!call.views.empty() && call.views[0]) {
    p.offset = call.views[0]->offset;
    p.shape = call.views[0]->shape, p.in_strides = call.views[0]->strides;
  }
  p.out_strides = out.strides;
  const int64_t rank = static_cast<int64_t>(p.shape.size());
  p.axis = call.parameters[0] < 0 ? call.parameters[0] + rank : call.parameters[0];
  if (p.axis < 0 || p.axis >= rank || out.shape.size() != p.shape.size()) return std::nullopt;
  p.n = p.shape[static_cast<size_t>(p.axis)];
  p.out_n = out.shape[static_cast<size_t>(p.axis)];
  for (int64_t d = 0; d < rank; ++d)
    if (d != p.axis) p.rows *= p.shape[static_cast<size_t>(d)];
  // positions are ints, sentinels past the row among them
  if (p.n >= (int64_t{1} << 31) - kLargestRadixTile) return std::nullopt;
  if (!p.picks.empty() && static_cast<int64_t>(p.picks.size()) != p.out_n) return std::nullopt;
  for (int64_t pick : p.picks)
    if (pick < 0 || pick >= p.n) return std::nullopt;
  if (p.picks.empty() && p.out_n > p.n) return std::nullopt;
  return p;
}

std::string key_type(DType dtype) {
  return dtype_size(dtype) == 8 ? "unsigned long long" : "unsigned";
}
std::string storage_type(DType dtype) {
  switch (dtype_size(dtype)) {
    case 1: return "unsigned char";
    case 2: return "unsigned short";
    case 4: return "unsigned";
    default: return "unsigned long long";
  }
}

// The key of the element at `at` (a const char*).
std::string key_of(const SortProblem& p, const std::string& at) {
  const std::string bits = "*(const " + storage_type(p.dtype) + "*)(" + at + ")";
  std::string key;
  switch (p.dtype) {
    case DType::Int8: key = "(unsigned)(unsigned char)(" + bits + " ^ 0x80u)"; break;
    case DType::Int16: key = "(unsigned)(unsigned short)(" + bits + " ^ 0x8000u)"; break;
    case DType::Int32: key = "(" + bits + " ^ 0x80000000u)"; break;
    case DType::Int64: key = "(" + bits + " ^ 0x8000000000000000ull)"; break;
    case DType::Float16:
      key = "(unsigned)kiln_sort_float_key<unsigned short>(" + bits + ", 0x8000u, 0x7c00u)";
      break;
    case DType::BFloat16:
      key = "(unsigned)kiln_sort_float_key<unsigned short>(" + bits + ", 0x8000u, 0x7f80u)";
      break;
    case DType::Float32:
      key = "kiln_sort_float_key<unsigned>(" + bits + ", 0x80000000u, 0x7f800000u)";
      break;
    case DType::Float64:
      key = "kiln_sort_float_key<unsigned long long>(" + bits +
            ", 0x8000000000000000ull, 0x7ff0000000000000ull)";
      break;
    default: key = "(" + key_type(p.dtype) + ")(" + bits + ")";  // bool and unsigned
  }
  if (!p.descending) return key;
  static const std::map<int64_t, std::string>& masks = *new std::map<int64_t, std::string>{
      {1, "0xffu"}, {2, "0xffffu"}, {4, "0xffffffffu"}, {8, "0xffffffffffffffffull"}};
  return "(" + key + " ^ " + masks.at(dtype_size(p.dtype)) + ")";
}

std::string largest_key(const SortProblem& p) {
  return dtype_size(p.dtype) == 8 ? "0xffffffffffffffffull" : "0xffffffffu";
}

// Lines setting in_at (and out_at with `out`), row `row`'s first element in the input (and the
// output).
std::string row_offsets(const SortProblem& p, const std::string& row, bool out = true) {
  std::ostringstream text;
  text << "    long long in_at = " << p.offset << "ll" << (out ? ", out_at = 0" : "")
       << ", rest = " << row << ";\n";
  for (size_t d = p.shape.size(); d-- > 0;) {
    if (static_cast<int64_t>(d) == p.axis || p.shape[d] == 1) continue;
    text << "    { const long long c = rest % " << p.shape[d] << "ll; rest /= " << p.shape[d]
         << "ll; in_at += c * " << p.in_strides[d] << "ll;";
    if (out) text << " out_at += c * " << p.out_strides[d] << "ll;";
    text << " }\n";
  }
  return text.str();
}

// The table of picks (kiln_picks[j]: the place in the order of output position j), or "".
std::string picks_table(const SortProblem& p) {
  if (p.picks.empty()) return "";
  std::string text = "  const int kiln_picks[] = {";
  for (size_t k = 0; k < p.picks.size(); ++k) text += (k ? ", " : "") + std::to_string(p.picks[k]);
  return text + "};\n";
}
std::string pick(const SortProblem& p, const std::string& j) {
  return p.picks.empty() ? j : "kiln_picks[" + j + "]";
}

// The line writing output element j of the row at out_at from `position` (an int).
std::string write_output(const SortProblem& p, const std::string& j, const std::string& position) {
  const size_t axis = static_cast<size_t>(p.axis);
  const std::string to =
      "out_at + (long long)" + j + " * " + std::to_string(p.out_strides[axis]) + "ll";
  if (p.positions) return "      ((long long*)kiln_args[1])[" + to + "] = " + position + ";\n";
  const std::string type = storage_type(p.dtype);
  return "      ((" + type + "*)kiln_args[1])[" + to + "] = ((const " + type +
         "*)kiln_args[0])[in_at + (long long)" + position + " * " +
         std::to_string(p.in_strides[axis]) + "ll];\n";
}

std::string element_address(const SortProblem& p, const std::string& index) {
  return "kiln_args[0] + (in_at + (long long)" + index + " * " +
         std::to_string(p.in_strides[static_cast<size_t>(p.axis)]) + "ll) * " +
         std::to_string(dtype_size(p.dtype));
}

int64_t power_of_two_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

int sort_threads(int64_t padded) {
  return static_cast<int>(std::clamp<int64_t>(padded / 2, kWarp, kMostSortThreads));
}

// A block per row: sorted in shared memory, written from there. `in_loop`: a device loop's
// function, which the loop block's first sort_threads run over all rows, with their barrier.
std::string row_sort_function(const SortProblem& p, const std::string& symbol, bool in_loop) {
  const int64_t padded = power_of_two_at_least(p.n);
  const int threads = sort_threads(padded);
  const std::string key = key_type(p.dtype);
  const std::string stride = in_loop ? std::to_string(threads) : "blockDim.x";
  std::ostringstream text;
  if (in_loop)
    text << "KILN_FN void " << symbol << "(const kiln_arg_table<2> kiln_args) {\n";
  else
    text << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") " << symbol
         << "(const kiln_arg_table<2> kiln_args) {\n";
  text << "  __shared__ " << key << " keys[" << padded << "];\n"
       << "  __shared__ int positions[" << padded << "];\n"
       << picks_table(p)
       << (in_loop ? "  for (long long row = 0; row < " + std::to_string(p.rows) + "ll; ++row) {\n"
                   : "  for (long long row = blockIdx.x; row < " + std::to_string(p.rows) +
                         "ll; row += gridDim.x) {\n")
       << row_offsets(p, "row")
       << "    for (int i = threadIdx.x; i < " << padded << "; i += " << stride << ") {\n"
       << "      keys[i] = i < " << p.n << " ? " << key_of(p, element_address(p, "i")) << " : "
       << largest_key(p) << ";\n"
       << "      positions[i] = i;\n"
       << "    }\n"
       << "    kiln_bitonic_sort<" << key << ", " << padded << ", " << (in_loop ? threads : 0)
       << ">(keys, positions);\n"
       << "    for (int j = threadIdx.x; j < " << p.out_n << "; j += " << stride << ") {\n"
       << "      const int position = positions[" << pick(p, "j") << "];\n"
       << write_output(p, "j", "position")
       << "    }\n"
       << "    kiln_sort_barrier<" << (in_loop ? threads : 0)
       << ">();  // before the next row's keys\n"
       << "  }\n}\n";
  return text.str();
}

// Whether a long sort of values sorts the keys alone: an integer's or a bool's key is its bits
// with the sign flipped (and all flipped for `descending`), so the output is the keys turned
// back. (A float's is not: both zeros have one key, every NaN another.)
bool keys_only(const SortProblem& p) {
  return !p.positions && !is_float(p.dtype);
}

// Whether a long sort of values carries each element's bits through the passes in place of
// its position (a 4-byte word either way), so that the output is written from them rather
// than gathered from the input at the positions (a random 32-byte sector each).
bool carries_bits(const SortProblem& p) {
  return !p.positions && !keys_only(p) && dtype_size(p.dtype) <= 4;
}

// A thread's elements in a radix pass: 16 of 4-byte keys or less, 8 of 8-byte keys, whose
// registers would leave a multiprocessor one block of 16.
int radix_items(const SortProblem& p) {
  return dtype_size(p.dtype) == 8 ? 8 : 16;
}
int64_t radix_tiles(const SortProblem& p) {
  const int64_t tile = kRadixThreads * radix_items(p);
  return (p.n + tile - 1) / tile;
}
int radix_passes(const SortProblem& p) { return static_cast<int>(dtype_size(p.dtype)); }

// The workspace of a long sort, in bytes from its start: two halves of keys, then (but
// keys_only) two of positions or bits, each rows x n; then what the keys launch clears: the
// look-back words (rows x tiles x 256, 8 bytes each), the rows' digit totals (rows x passes x
// 256) and the passes' tile counters.
struct Workspace {
  int64_t values = 0, lookback = 0, totals = 0, counters = 0, end = 0;
};

Workspace workspace_layout(const SortProblem& p) {
  const int64_t all = p.rows * p.n, key = dtype_size(p.dtype) == 8 ? 8 : 4;
  Workspace w;
  w.values = 2 * all * key;  // a multiple of 8: the look-back words stay aligned
  w.lookback = w.values + (keys_only(p) ? 0 : 2 * all * 4);
  w.totals = w.lookback + 8 * p.rows * radix_tiles(p) * kDigits;
  w.counters = w.totals + 4 * p.rows * radix_passes(p) * kDigits;
  w.end = w.counters + 4 * radix_passes(p);
  return w;
}

std::string workspace(const SortProblem& p) {
  const Workspace w = workspace_layout(p);
  const std::string key = key_type(p.dtype), all = std::to_string(p.rows * p.n) + "ll";
  const auto at = [](const std::string& type, int64_t offset) {
    return "(" + type + "*)(kiln_args[2] + " + std::to_string(offset) + "ll)";
  };
  const std::string keys = "(" + key + "*)kiln_args[2]", values = at("int", w.values),
                    n = std::to_string(p.n) + "ll";
  return "  const kiln_radix_half<" + key + "> kiln_halves[2] = {{" + keys + ", " + values +
         ", " + n + "}, {" + keys + " + " + all + ", " + values + " + " + all + ", " + n +
         "}};\n  unsigned long long* const kiln_lookback = " +
         at("unsigned long long", w.lookback) + ";\n  unsigned* const kiln_totals = " +
         at("unsigned", w.totals) + ";\n  unsigned* const kiln_tile_counters = " +
         at("unsigned", w.counters) + ";\n";
}

// A kernel of `threads` threads over the workspace.
std::string radix_signature(const SortProblem& p, const std::string& symbol, int threads) {
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) + ") " +
         symbol + "(const kiln_arg_table<3> kiln_args) {\n" + workspace(p);
}

// A loop over `elements` elements, a thread each (grid-stride): index `e`.
std::string grid_stride_loop(const std::string& elements) {
  return "  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < " +
         elements + ";\n       e += (long long)gridDim.x * blockDim.x) {\n";
}

// Whether the last pass writes the result itself (every place of the order, written as the
// element's position, its bits carried, or its key turned back), not a last launch.
bool last_pass_writes_output(const SortProblem& p) {
  return p.picks.empty() && p.out_n == p.n && (keys_only(p) || carries_bits(p) || p.positions);
}

// The bits of the element whose key is `key` (keys_only: the key turned back).
std::string bits_of_key(const SortProblem& p, const std::string& key) {
  static const std::map<int64_t, std::string>& masks = *new std::map<int64_t, std::string>{
      {1, "0xffu"}, {2, "0xffffu"}, {4, "0xffffffffu"}, {8, "0xffffffffffffffffull"}};
  static const std::map<int64_t, std::string>& signs = *new std::map<int64_t, std::string>{
      {1, "0x80u"}, {2, "0x8000u"}, {4, "0x80000000u"}, {8, "0x8000000000000000ull"}};
  const int64_t size = dtype_size(p.dtype);
  std::string bits = p.descending ? "(" + key + " ^ " + masks.at(size) + ")" : key;
  if (is_signed_integer(p.dtype)) bits = "(" + bits + " ^ " + signs.at(size) + ")";
  return "(" + storage_type(p.dtype) + ")" + bits;
}

// The line writing output element j of the row at out_at: from the element's value (its
// position or carried bits), or (`from_key`) from its key.
std::string store_output(const SortProblem& p, bool from_key) {
  const std::string type = storage_type(p.dtype);
  const std::string to = "out_at + (long long)j * " +
                         std::to_string(p.out_strides[static_cast<size_t>(p.axis)]) + "ll";
  if (from_key)
    return "      ((" + type + "*)kiln_args[1])[" + to + "] = " + bits_of_key(p, "key") + ";\n";
  if (carries_bits(p))
    return "      ((" + type + "*)kiln_args[1])[" + to + "] = (" + type + ")(unsigned)position;\n";
  return write_output(p, "j", "position");
}

// The sort's own Source (its operand: keys made on the fly, values its positions or bits) and
// Sink (its result, where the last pass writes it): `name`_input and `name`_output.
std::string operand_structs(const SortProblem& p, const std::string& name) {
  const std::string key = key_type(p.dtype), type = storage_type(p.dtype);
  std::ostringstream text;
  text << "struct " << name << "_input {\n"
       << "  kiln_arg_table<3> kiln_args;\n"
       << "  KILN_FN long long at(long long row) const {\n" << row_offsets(p, "row", false)
       << "    return in_at;\n  }\n"
       << "  KILN_FN " << key << " key(long long in_at, int i) const {\n"
       << "    return " << key_of(p, element_address(p, "i")) << ";\n  }\n"
       << "  KILN_FN int value(long long in_at, int i) const {\n    return "
       << (carries_bits(p) ? "(int)*(const " + type + "*)(" + element_address(p, "i") + ")" : "i")
       << ";\n  }\n};\n";
  if (!last_pass_writes_output(p)) return text.str();
  text << "struct " << name << "_output {\n"
       << "  static constexpr bool keys = " << (keys_only(p) ? "true" : "false")
       << ", values = " << (keys_only(p) ? "false" : "true") << ";\n"
       << "  kiln_arg_table<3> kiln_args;\n"
       << "  KILN_FN long long at(long long row) const {\n" << row_offsets(p, "row", true)
       << "    return out_at;\n  }\n"
       << "  KILN_FN void store_key(long long out_at, int j, " << key << " key) const {\n"
       << (keys_only(p) ? store_output(p, true) : "") << "  }\n"
       << "  KILN_FN void store_value(long long out_at, int j, int position) const {\n"
       << (keys_only(p) ? "" : store_output(p, false)) << "  }\n};\n";
  return text.str();
}

// Clears the look-back words, totals and tile counters (each launch of the sort finds them so).
std::string clear_function(const SortProblem& p, const std::string& symbol) {
  const Workspace w = workspace_layout(p);
  return radix_signature(p, symbol, kPassThreads) +
         grid_stride_loop(std::to_string((w.end - w.lookback) / 4) + "ll") +
         "    ((unsigned*)kiln_lookback)[e] = 0;\n  }\n}\n";
}

// The launches of the radix sort after the clearing: the rows' digit counts, then a pass a
// digit, from the operand into half 0, then back and forth (the last into the result where it
// can); returns the half the last pass wrote, or -1 for the result.
int add_radix_passes(const SortProblem& p, const std::string& name, const target::Target& target,
                     std::string& text, std::vector<runtime::CudaLaunch>& launches) {
  const std::string n = std::to_string(p.n) + "ll", tiles = std::to_string(radix_tiles(p)) + "ll",
                    rows = std::to_string(p.rows) + "ll", passes = std::to_string(radix_passes(p));
  const std::string key = key_type(p.dtype), values = keys_only(p) ? "false" : "true",
                    items = std::to_string(radix_items(p));
  const std::string input = name + "_input{kiln_args}";
  const auto add = [&](const std::string& symbol, const std::string& call) {
    runtime::CudaLaunch launch;
    launch.symbol = symbol;
    launch.threads = kRadixThreads;
    launch.blocks = std::min(p.rows * radix_tiles(p),
                             2 * kBlocksPerMultiprocessor * std::max(1, target.multiprocessors));
    launch.scratch_of = 0;
    text += radix_signature(p, symbol, kRadixThreads) + "  " + call + ";\n}\n";
    launches.push_back(launch);
  };
  add(name + "_counts", "kiln_radix_histogram<" + key + ", " + passes + ", " + items + ">(" +
                            input + ", " + n + ", " + tiles + ", " + rows + ", kiln_totals)");
  int to = -1;
  for (int pass = 0; pass < radix_passes(p); ++pass) {
    const std::string source = pass == 0 ? input : "kiln_halves[" + std::to_string(to) + "]";
    const bool last = pass + 1 == radix_passes(p);
    to = last && last_pass_writes_output(p) ? -1 : pass % 2;
    const std::string sink = to < 0 ? name + "_output{kiln_args}"
                                    : "kiln_halves[" + std::to_string(to) + "]";
    add(name + "_digit" + std::to_string(pass),
        "kiln_radix_pass<" + key + ", " + values + ", " + items + ">(" + source + ", " + sink +
            ", kiln_totals, kiln_lookback, kiln_tile_counters + " + std::to_string(pass) + ", " +
            n + ", " + tiles + ", " + rows + ", " + std::to_string(pass) + ", " + passes + ")");
  }
  return to;
}

// The output from half `from`: positions, bits carried, or keys turned back.
std::string output_function(const SortProblem& p, int from, const std::string& symbol) {
  const std::string half = "kiln_halves[" + std::to_string(from) + "]";
  const std::string at = "r * " + std::to_string(p.n) + "ll + " + pick(p, "j");
  std::ostringstream text;
  text << radix_signature(p, symbol, kPassThreads) << picks_table(p)
       << grid_stride_loop(std::to_string(p.rows * p.out_n) + "ll")
       << "    const long long r = e / " << p.out_n << "ll;\n"
       << "    const int j = (int)(e - r * " << p.out_n << "ll);\n"
       << row_offsets(p, "r")
       << "    {\n";
  if (keys_only(p))
    text << "      const " << key_type(p.dtype) << " key = " << half << ".key_data[" << at
         << "];\n";
  else
    text << "      const int position = " << half << ".value_data[" << at << "];\n";
  text << store_output(p, keys_only(p)) << "    }\n"
       << "  }\n}\n";
  return text.str();
}

int64_t grid_stride_blocks(int64_t elements, int threads, const target::Target& target) {
  return std::clamp<int64_t>((elements + threads - 1) / threads, 1,
                             kBlocksPerMultiprocessor * std::max(1, target.multiprocessors));
}

}  // namespace

std::optional<LoopSort> loop_sort(const Program& program, size_t step, const std::string& symbol) {
  const sched::Step& s = program.steps[step];
  if (s.kind != sched::StepKind::Extern) return std::nullopt;
  std::optional<SortProblem> p = sort_problem(s.call, program.buffers);
  if (!p || p->n > kBlockSortUpTo) return std::nullopt;
  LoopSort sort;
  sort.symbol = symbol;
  const int64_t padded = power_of_two_at_least(p->n);
  sort.threads = sort_threads(padded);
  sort.arguments = {s.call.inputs[0], s.call.output};
  if (p->rows > 0 && p->n > 0 && p->out_n > 0) sort.function = row_sort_function(*p, symbol, true);
  else sort.function = "KILN_FN void " + symbol + "(const kiln_arg_table<2>) {}\n";
  int rounds = 0;
  for (int64_t size = 2; size <= padded; size *= 2)
    for (int64_t stride = size / 2; stride > 0; stride /= 2) ++rounds;
  sort.rounds = p->rows * rounds * std::max<int64_t>(1, padded / 2 / sort.threads);
  const int64_t element = dtype_size(p->dtype);
  sort.bytes = p->rows * (p->n * element + p->out_n * (p->positions ? 8 : element));
  return sort;
}

std::string sort_device_code() { return sort_text(); }

void add_sort_kernels(const Program& program, const target::Target& target, CudaSource& source) {
  bool first = true;
  for (size_t step = 0; step < program.steps.size(); ++step) {
    const sched::Step& s = program.steps[step];
    if (s.kind != sched::StepKind::Extern) continue;
    std::optional<SortProblem> problem = sort_problem(s.call, program.buffers);
    if (!problem) continue;
    const SortProblem& p = *problem;
    if (first && source.header.find(sort_text()) == std::string::npos)
      source.header += sort_text();
    first = false;
    runtime::CudaKernelCall call;
    call.arguments = {s.call.inputs[0], s.call.output};
    call.replaces_step = static_cast<int32_t>(step);
    const std::string name = "kiln_sort" + std::to_string(step);
    std::string text = "// Step " + std::to_string(step) + ": " +
                       (p.positions ? "argsort" : "sort") + " of " + std::to_string(p.rows) +
                       " rows of " + std::to_string(p.n) + " " + std::string(dtype_name(p.dtype)) +
                       (p.descending ? ", descending" : "") + " (codegen/cuda/sort_kernels.cpp)\n";
    if (p.rows > 0 && p.n > 0 && p.out_n > 0) {
      runtime::CudaLaunch launch;
      if (p.n <= kBlockSortUpTo) {
        launch.symbol = name;
        launch.threads = sort_threads(power_of_two_at_least(p.n));
        launch.blocks = std::min(p.rows, kMostBlocks);
        text += row_sort_function(p, launch.symbol, false);
        call.launches.push_back(launch);
      } else {
        text += operand_structs(p, name);
        launch.symbol = name + "_clear";
        launch.threads = kPassThreads;
        launch.blocks = grid_stride_blocks((workspace_layout(p).end - workspace_layout(p).lookback) / 4,
                                           kPassThreads, target);
        launch.scratch_bytes = workspace_layout(p).end;
        text += clear_function(p, launch.symbol);
        call.launches.push_back(launch);
        const int from = add_radix_passes(p, name, target, text, call.launches);
        if (from >= 0) {
          runtime::CudaLaunch out;
          out.symbol = name + "_out";
          out.threads = kPassThreads;
          out.blocks = grid_stride_blocks(p.rows * p.out_n, kPassThreads, target);
          out.scratch_of = 0;
          text += output_function(p, from, out.symbol);
          call.launches.push_back(out);
        }
      }
    }
    source.functions.push_back(text);
    source.kernels.push_back(call);
  }
}

}  // namespace kiln::codegen::cuda_detail
