#include "decompose/manipulation.h"

#include <map>

#include "kiln/error.h"

namespace kiln::decompose {
namespace {

std::vector<int64_t> shape_of(const Builder& b, ValueId x) { return ir::to_ints(b.node(x).shape); }

// x[start:stop] along `axis`.
ValueId range(Builder& b, ValueId x, int64_t axis, int64_t start, int64_t stop) {
  std::vector<int64_t> shape = shape_of(b, x);
  std::vector<int64_t> starts(shape.size(), 0), stops = shape, steps(shape.size(), 1);
  starts[static_cast<size_t>(axis)] = start;
  stops[static_cast<size_t>(axis)] = stop;
  return b.slice(x, starts, stops, steps);
}

}  // namespace

ValueId tile(Builder& b, ValueId x, std::vector<int64_t> reps) {
  for (int64_t r : reps)
    if (r < 0)
      throw Error(ErrorKind::Value,
                  error_message("tile", b.location(), "negative dimensions are not allowed"));
  std::vector<int64_t> shape = shape_of(b, x);
  size_t rank = std::max(reps.size(), shape.size());
  shape.insert(shape.begin(), rank - shape.size(), 1);
  reps.insert(reps.begin(), rank - reps.size(), 1);
  // (s0, s1) -> (1, s0, 1, s1) -> (r0, s0, r1, s1) -> (r0*s0, r1*s1): one broadcast view.
  std::vector<int64_t> interleaved, spread, result;
  for (size_t d = 0; d < rank; ++d) {
    interleaved.insert(interleaved.end(), {1, shape[d]});
    spread.insert(spread.end(), {reps[d], shape[d]});
    result.push_back(reps[d] * shape[d]);
  }
  ValueId view = b.broadcast(b.reshape(x, ir::from_ints(interleaved)), ir::from_ints(spread));
  return b.reshape(view, ir::from_ints(result));
}

ValueId repeat(Builder& b, ValueId x, int64_t count, int64_t axis) {
  if (count < 0)
    throw Error(ErrorKind::Value,
                error_message("repeat", b.location(), "negative dimensions are not allowed"));
  std::vector<int64_t> shape = shape_of(b, x);
  auto at = shape.begin() + axis + 1;
  // (.., n, ..) -> (.., n, 1, ..) -> (.., n, count, ..) -> (.., n*count, ..)
  std::vector<int64_t> expanded(shape.begin(), at), spread(shape.begin(), at);
  expanded.push_back(1);
  spread.push_back(count);
  expanded.insert(expanded.end(), at, shape.end());
  spread.insert(spread.end(), at, shape.end());
  std::vector<int64_t> result = shape;
  result[static_cast<size_t>(axis)] *= count;
  ValueId view = b.broadcast(b.reshape(x, ir::from_ints(expanded)), ir::from_ints(spread));
  return b.reshape(view, ir::from_ints(result));
}

ValueId roll(Builder& b, ValueId x, const std::vector<int64_t>& shifts,
             const std::vector<int64_t>& axes) {
  std::map<int64_t, int64_t> total;  // by axis
  for (size_t k = 0; k < axes.size(); ++k) total[axes[k]] += shifts[k];
  for (auto [axis, shift] : total) {
    int64_t n = shape_of(b, x)[static_cast<size_t>(axis)];
    int64_t offset = n == 0 ? 0 : ((shift % n) + n) % n;
    if (offset == 0) continue;
    x = b.concat({range(b, x, axis, n - offset, n), range(b, x, axis, 0, n - offset)}, axis);
  }
  return x;
}

}  // namespace kiln::decompose
