#include "api/logging.h"

#include <array>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "kiln/error.h"

namespace kiln::api {
namespace {

struct ChannelName {
  LogChannel channel;
  std::string_view name;
};

// The one list of channels: parsing, printing and the warning all read it.
constexpr std::array<ChannelName, 9> kChannelNames = {{
    {LogChannel::Graph, "graph"},
    {LogChannel::Passes, "passes"},
    {LogChannel::Schedule, "schedule"},
    {LogChannel::OutputCode, "output_code"},
    {LogChannel::Cache, "cache"},
    {LogChannel::Perf, "perf"},
    {LogChannel::GraphBreaks, "graph_breaks"},
    {LogChannel::Recompiles, "recompiles"},
    {LogChannel::Guards, "guards"},
}};

uint32_t channel_bit(LogChannel channel) { return 1u << static_cast<unsigned>(channel); }

std::string_view channel_name(LogChannel channel) {
  for (const ChannelName& entry : kChannelNames) {
    if (entry.channel == channel) return entry.name;
  }
  return "unknown";
}

// Set once from KILN_LOGS, replaced by set_log_channels; read on every log() call, so atomic.
std::atomic<uint32_t> enabled_channels{0};
std::once_flag environment_parsed;
std::string environment_error;  // written once, under environment_parsed

std::string trim_lower(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  std::string result(text.substr(begin, end - begin));
  for (char& character : result) character = static_cast<char>(tolower(character));
  return result;
}

// "graph,passes" / "all" / "all,-perf" (a leading '-' turns a channel off, as in TORCH_LOGS'
// "+"/"-" modifiers; '+' is accepted and ignored). An unknown name throws Error(Value).
uint32_t parse_channels(std::string_view comma_list, const std::string& origin) {
  uint32_t mask = 0;
  size_t position = 0;
  while (position <= comma_list.size()) {
    size_t comma = comma_list.find(',', position);
    if (comma == std::string_view::npos) comma = comma_list.size();
    std::string item = trim_lower(comma_list.substr(position, comma - position));
    position = comma + 1;
    bool disable = false;
    if (!item.empty() && (item[0] == '-' || item[0] == '+')) {
      disable = item[0] == '-';
      item.erase(0, 1);
    }
    if (item.empty()) continue;
    uint32_t bits = 0;
    if (item == "all") {
      for (const ChannelName& entry : kChannelNames) bits |= channel_bit(entry.channel);
    } else {
      try {
        bits = channel_bit(channel_from_name(item));
      } catch (const Error&) {
        throw Error(ErrorKind::Value, "kiln: " + origin + ": unknown log channel '" + item +
                                          "' (valid: " + channel_names() + ", all)");
      }
    }
    mask = disable ? (mask & ~bits) : (mask | bits);
  }
  return mask;
}

void parse_environment_once() {
  std::call_once(environment_parsed, [] {
    const char* value = getenv("KILN_LOGS");
    if (value == nullptr) return;
    try {
      enabled_channels.store(parse_channels(value, "KILN_LOGS"));
    } catch (const Error& error) {
      environment_error = error.what();
    }
  });
}

}  // namespace

bool log_enabled(LogChannel channel) {
  parse_environment_once();
  return (enabled_channels.load(std::memory_order_relaxed) & channel_bit(channel)) != 0;
}

void set_log_channels(const std::string& comma_list) {
  // Parse the environment first so that it cannot later overwrite this explicit choice.
  parse_environment_once();
  enabled_channels.store(parse_channels(comma_list, "set_log_channels"));
}

void check_log_environment() {
  parse_environment_once();
  if (!environment_error.empty()) throw Error(ErrorKind::Value, environment_error);
}

LogChannel channel_from_name(const std::string& name) {
  for (const ChannelName& entry : kChannelNames)
    if (entry.name == name) return entry.channel;
  throw Error(ErrorKind::Value,
              "kiln: unknown log channel '" + name + "' (valid: " + channel_names() + ")");
}

std::string channel_names() {
  std::string names;
  for (const ChannelName& entry : kChannelNames)
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

void log(LogChannel channel, const std::string& text) {
  if (!log_enabled(channel)) return;
  std::string line = "[kiln:" + std::string(channel_name(channel)) + "] " + text;
  if (line.empty() || line.back() != '\n') line += '\n';
  // One write per message, so messages from several threads do not interleave mid-line.
  fwrite(line.data(), 1, line.size(), stderr);
  fflush(stderr);
}

std::string milliseconds_text(std::chrono::steady_clock::time_point start) {
  double elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  char text[32];
  snprintf(text, sizeof text, "%.3f ms", elapsed);
  return text;
}

}  // namespace kiln::api
