#include "codegen/cuda/compilation_units.h"

#include <algorithm>
#include <numeric>
#include <string_view>

#include "codegen/cuda/cuda_emitter.h"

namespace kiln::codegen {

namespace {

// Each unit pays NVRTC's start on the header again: about this many functions a unit.
constexpr size_t kFunctionsPerUnit = 4;
// What a kernel function costs NVRTC besides its statements (its entry, the argument table's
// loads), in estimated_nvrtc_cost's characters: BERT's kernels took about 15 ms and a
// millisecond a further 90 characters (sm_90, NVRTC 13.0, thread CPU time).
constexpr int64_t kFunctionCost = 1500;
// NVRTC's time on the header every unit repeats (about 55 ms: BERT's, sm_90), in
// estimated_nvrtc_cost's characters.
constexpr int64_t kHeaderCost = 5000;
// Unrolling beyond this many copies of a line is counted as this many (no overflow).
constexpr int64_t kMostCopies = int64_t{1} << 20;

std::string_view trimmed(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const size_t last = line.find_last_not_of(" \t\r");
  return line.substr(first, last - first + 1);
}

// The integer at the start of `text` (after spaces), or -1.
int64_t leading_integer(std::string_view text) {
  size_t at = text.find_first_not_of(' ');
  if (at == std::string_view::npos || text[at] < '0' || text[at] > '9') return -1;
  int64_t value = 0;
  for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at)
    value = std::min(kMostCopies, value * 10 + (text[at] - '0'));
  return value;
}

// The constant trip count of a `for (init; v < N; step)` line (the emitter's unrolled loops
// start at 0), or -1.
int64_t trip_count(std::string_view loop) {
  const size_t condition = loop.find(';');
  if (condition == std::string_view::npos) return -1;
  const size_t end = loop.find(';', condition + 1), less = loop.find('<', condition);
  if (end == std::string_view::npos || less == std::string_view::npos || less > end) return -1;
  const std::string_view bound = loop.substr(less + 1, end - less - 1);
  const int64_t count = leading_integer(bound);
  return count >= 0 && trimmed(bound).find_first_not_of("0123456789") == std::string_view::npos
             ? count
             : -1;
}

// The copies of its body that `#pragma unroll<count>` makes of the loop on line `loop`: the
// count (at most the trip count), or the constant trip count for a full unroll; 1 when the
// compiler cannot know it.
int64_t unrolled_copies(std::string_view count, std::string_view loop) {
  const int64_t trips = trip_count(loop), asked = leading_integer(count);
  if (asked > 0) return trips > 0 ? std::min(asked, trips) : asked;
  return std::max<int64_t>(trips, 1);
}

// A product of few rows is one line of its function, `kiln_skinny_matmul<M, N, K, LDA, LDB,
// ROWS, VEC>(a, b, c);`, an instance of a header template (skinny_matmul.cpp) whose code the
// line does not show: its cost, from NVRTC's time on BERT's products (sm_90, thread CPU time,
// about 90 characters of estimated_nvrtc_cost a millisecond): 120 ms an instance with one step
// of its K loop unrolled, 25-40 ms each further step (of K / 1024 with 16-byte loads, K / 256
// without, at most 4 unrolled). 0 for any other line.
int64_t template_instance_cost(std::string_view line) {
  constexpr std::string_view kSkinny = "kiln_skinny_matmul<";
  constexpr int64_t kInstanceCost = 6000, kStepCost = 3300, kThreads = 256, kMostSteps = 4;
  if (!line.starts_with(kSkinny)) return 0;
  std::vector<int64_t> parameters;
  std::string_view rest = line.substr(kSkinny.size());
  rest = rest.substr(0, rest.find('>'));
  for (size_t comma; (comma = rest.find(',')) != std::string_view::npos;) {
    parameters.push_back(leading_integer(rest.substr(0, comma)));
    rest.remove_prefix(comma + 1);
  }
  if (parameters.size() != 6 || parameters[2] <= 0) return kInstanceCost + kStepCost;
  const int64_t step = trimmed(rest).starts_with("true") ? 4 : 1;
  const int64_t steps = (parameters[2] / step + kThreads - 1) / kThreads;
  return kInstanceCost + kStepCost * std::clamp<int64_t>(steps, 1, kMostSteps);
}

}  // namespace

int64_t estimated_nvrtc_cost(const std::string& functions) {
  constexpr std::string_view kPragma = "#pragma unroll";
  int64_t cost = 0;
  std::vector<int64_t> copies{1};  // of the lines in each open block, outermost first
  std::string_view pending;        // the count of a `#pragma unroll` on the line before
  bool unroll_pending = false;
  std::string_view rest = functions;
  while (!rest.empty()) {
    const size_t newline = std::min(rest.find('\n'), rest.size());
    const std::string_view line = trimmed(rest.substr(0, newline));
    rest.remove_prefix(std::min(newline + 1, rest.size()));
    if (line.empty() || line == "}" || line.starts_with("//")) {  // a block's end: free
      if (line == "}" && copies.size() > 1) copies.pop_back();
      continue;
    }
    if (line.starts_with(kPragma)) {
      pending = line.substr(kPragma.size()), unroll_pending = true;
      continue;
    }
    if (line.starts_with("#")) continue;
    const bool unrolled = unroll_pending && line.starts_with("for ");
    const int64_t body_copies = unrolled ? unrolled_copies(pending, line) : 1;
    unroll_pending = false;
    if (line.find("__global__") != std::string_view::npos) cost += kFunctionCost;
    cost += template_instance_cost(line);
    const bool one_line_body = unrolled && line.back() != '{';
    cost += int64_t(line.size()) * std::min(kMostCopies, copies.back() * (one_line_body ? body_copies : 1));
    bool first_brace = true;
    for (char c : line) {
      if (c == '{') {
        const int64_t inner = unrolled && first_brace ? body_copies : 1;
        copies.push_back(std::min(kMostCopies, copies.back() * inner));
        first_brace = false;
      } else if (c == '}' && copies.size() > 1) {
        copies.pop_back();
      }
    }
  }
  return cost;
}

size_t cuda_unit_count(const std::vector<int64_t>& costs, size_t most_units) {
  const size_t functions = costs.size();
  size_t units = (functions + kFunctionsPerUnit - 1) / kFunctionsPerUnit;
  // Enough units that the costliest function can bound the slowest, each worth a header.
  const int64_t costliest = std::max(
      kHeaderCost, functions ? *std::max_element(costs.begin(), costs.end()) : int64_t{0});
  const int64_t total = std::accumulate(costs.begin(), costs.end(), int64_t{0});
  units = std::max<size_t>(units, static_cast<size_t>((total + costliest - 1) / costliest));
  return std::max<size_t>(1, std::min({most_units, functions, units}));
}

std::vector<std::vector<size_t>> balanced_units(const std::vector<int64_t>& costs, size_t units) {
  const size_t count = costs.size();
  units = std::max<size_t>(1, std::min(units, count));
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::vector<std::vector<size_t>> members(units);
  std::vector<int64_t> loads(units, 0);
  for (size_t function : order) {
    const size_t unit = std::min_element(loads.begin(), loads.end()) - loads.begin();
    members[unit].push_back(function);
    loads[unit] += costs[function];
  }
  for (std::vector<size_t>& unit : members) std::sort(unit.begin(), unit.end());
  return members;
}

std::vector<int64_t> estimated_nvrtc_costs(const CudaSource& source) {
  std::vector<int64_t> costs;
  for (const std::string& functions : source.functions)
    costs.push_back(estimated_nvrtc_cost(functions));
  return costs;
}

std::vector<std::string> split_cuda_source(const CudaSource& source, size_t units) {
  const std::vector<int64_t> costs = estimated_nvrtc_costs(source);
  std::vector<std::string> texts;
  for (const std::vector<size_t>& members : balanced_units(costs, units)) {
    std::string text = source.header;
    for (size_t function : members) text += source.functions[function];
    texts.push_back(std::move(text));
  }
  return texts;
}

}  // namespace kiln::codegen
