// KILN_LOGS: a comma list of channels, like TORCH_LOGS. Read once from the environment;
// tests and the Python layer may override it with set_log_channels.
#pragma once
#include <chrono>
#include <string>

namespace kiln::api {

enum class LogChannel {
  Graph, Passes, Schedule, OutputCode, Cache, Perf, GraphBreaks, Recompiles, Guards
};

bool log_enabled(LogChannel channel);
// Names: graph, passes, schedule, output_code, cache, perf, graph_breaks, recompiles, guards;
// "all" turns every channel on and "-name" turns one off again ("all,-perf"). Case and spaces
// are ignored; an unknown name is an Error(Value) listing the valid ones.
void set_log_channels(const std::string& comma_list);
// Throws the Error(Value) that KILN_LOGS deserves when it names an unknown channel (the
// environment is read once; both front ends call this before they compile or import).
void check_log_environment();
// The channel called `name`; Error(Value) for an unknown one.
LogChannel channel_from_name(const std::string& name);
// "graph, passes, ...": the valid names, for messages and documentation.
std::string channel_names();
// Writes "[kiln:<channel>] <text>" to stderr when the channel is on.
void log(LogChannel channel, const std::string& text);
// "1.234 ms" since `start` (KILN_LOGS=perf lines).
std::string milliseconds_text(std::chrono::steady_clock::time_point start);

}  // namespace kiln::api
