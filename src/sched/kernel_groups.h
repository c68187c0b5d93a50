// Which materialized values (roots) of a graph share a kernel, before any kernel is built
// (scheduler.cpp builds them in this order): consecutive roots of one domain that fusion_rules.h
// lets join, and small roots refused by the kernel being formed that join an earlier kernel of
// their elements after everything they read.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::sched {

// A materialized value computed into `buffer`.
struct Root {
  ir::ValueId node;
  int32_t buffer;
  bool copy;  // an output that is another buffer's value (an input, a constant, a repeat)
};

// A step of the program: a kernel's roots, or one root built alone (an extern call, a scatter,
// a loop, a scan, a masked update in its base's buffer).
struct KernelGroup {
  std::vector<Root> roots;
  std::set<ir::ValueId> nodes;
  bool alone = false;
  // Ends with a one-element scatter (one_element_scatter in kernel_groups.cpp): no root joins
  // after it, since the kernel's values are all computed before its stores.
  bool closed = false;
  int64_t ops = 0;  // the graph nodes its roots inline (a bound on its source: kernel_groups.cpp)
  void add(const Root& root, int64_t root_ops) {
    roots.push_back(root);
    nodes.insert(root.node);
    ops += root_ops;
  }
};

// `roots` in schedule order, grouped. buffer_of[value]: its buffer (-1 inlined); base_of[value]:
// the base an in-place update overwrites (-1 none); in_arena[buffer]: whether the buffer is an
// intermediate (memory of the arena, which the buffer plan reuses), for every buffer. Each
// refusal between neighbouring roots goes to `notes` (KILN_LOGS=schedule).
std::vector<KernelGroup> group_roots(const ir::Graph& graph, const std::vector<int32_t>& buffer_of,
                                     const std::vector<ir::ValueId>& base_of,
                                     const std::vector<bool>& in_arena,
                                     const std::vector<Root>& roots,
                                     std::vector<std::string>& notes);

}  // namespace kiln::sched
