// KILN_LOGS: a comma list of channels, like TORCH_LOGS. Read once from the environment;
// tests and the Python layer may override it with set_log_channels.
#pragma once
#include <string>

namespace kiln::api {

enum class LogChannel {
  Graph, Passes, Schedule, OutputCode, Cache, Perf, GraphBreaks, Recompiles, Guards
};

bool log_enabled(LogChannel channel);
// Names: graph, passes, schedule, output_code, cache, perf, graph_breaks, recompiles, guards;
// "all" turns every channel on and "-name" turns one off again ("all,-perf"). Case and spaces
// are ignored; unknown names print a one-line warning listing the valid ones.
void set_log_channels(const std::string& comma_list);
// Writes "[kiln:<channel>] <text>" to stderr when the channel is on.
void log(LogChannel channel, const std::string& text);

}  // namespace kiln::api
