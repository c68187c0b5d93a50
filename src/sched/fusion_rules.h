// The scheduler's fusion rules: whether a materialized value can join the kernel being built for
// a group of them, and if not why (Inductor's WhyNoFuse; the `schedule` log prints the reason).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::sched {

// "%id (op at location)": a value as the fusion notes name it.
std::string describe_value(const ir::Graph& graph, ir::ValueId id);

// Why `root` cannot join the kernel of `group` (materialized values in schedule order, the first
// deciding the iteration domain; `copy`: root is an output copying another buffer's value);
// empty when it can. buffer_of[value]: its buffer, or -1 where it is inlined.
std::string fusion_refusal(const ir::Graph& graph, const std::vector<int32_t>& buffer_of,
                           const std::set<ir::ValueId>& group, ir::ValueId front, ir::ValueId root,
                           bool copy);

}  // namespace kiln::sched
