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
// loads), in estimated_nvrtc_cost's characters.
constexpr int64_t kFunctionCost = 400;
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

size_t cuda_unit_count(size_t functions, size_t most_units) {
  return std::max<size_t>(1, std::min(most_units, (functions + kFunctionsPerUnit - 1) /
                                                      kFunctionsPerUnit));
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

std::vector<std::string> split_cuda_source(const CudaSource& source, size_t units) {
  std::vector<int64_t> costs;
  for (const std::string& functions : source.functions)
    costs.push_back(estimated_nvrtc_cost(functions));
  std::vector<std::string> texts;
  for (const std::vector<size_t>& members : balanced_units(costs, units)) {
    std::string text = source.header;
    for (size_t function : members) text += source.functions[function];
    texts.push_back(std::move(text));
  }
  return texts;
}

}  // namespace kiln::codegen
