// KILN_LOGS channel parsing and the log line format.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/logging.h"
#include "kiln/error.h"

namespace {

using kiln::api::log_enabled;
using kiln::api::LogChannel;
using kiln::api::set_log_channels;

const std::vector<LogChannel> kAllChannels = {
    LogChannel::Graph,      LogChannel::Passes,      LogChannel::Schedule,
    LogChannel::OutputCode, LogChannel::Cache,       LogChannel::Perf,
    LogChannel::GraphBreaks, LogChannel::Recompiles, LogChannel::Guards};

// Leaves logging off after each test, whatever KILN_LOGS the test run was started with.
class LoggingTest : public testing::Test {
 protected:
  void TearDown() override { set_log_channels(""); }
};

int enabled_count() {
  int count = 0;
  for (LogChannel channel : kAllChannels) count += log_enabled(channel) ? 1 : 0;
  return count;
}

TEST_F(LoggingTest, EnablesExactlyTheListedChannels) {
  set_log_channels("graph,output_code,graph_breaks");
  EXPECT_TRUE(log_enabled(LogChannel::Graph));
  EXPECT_TRUE(log_enabled(LogChannel::OutputCode));
  EXPECT_TRUE(log_enabled(LogChannel::GraphBreaks));
  EXPECT_FALSE(log_enabled(LogChannel::Passes));
  EXPECT_FALSE(log_enabled(LogChannel::Cache));
  EXPECT_EQ(enabled_count(), 3);

  set_log_channels("recompiles");  // replaces, does not add
  EXPECT_TRUE(log_enabled(LogChannel::Recompiles));
  EXPECT_FALSE(log_enabled(LogChannel::Graph));
  EXPECT_EQ(enabled_count(), 1);

  set_log_channels("");
  EXPECT_EQ(enabled_count(), 0);
}

TEST_F(LoggingTest, EveryChannelNameParses) {
  const std::vector<std::string> names = {"graph", "passes",       "schedule",
                                          "output_code", "cache",  "perf",
                                          "graph_breaks", "recompiles", "guards"};
  for (size_t i = 0; i < names.size(); ++i) {
    set_log_channels(names[i]);
    EXPECT_TRUE(log_enabled(kAllChannels[i])) << names[i];
    EXPECT_EQ(enabled_count(), 1) << names[i];
  }
}

TEST_F(LoggingTest, AllAndExclusions) {
  set_log_channels("all");
  EXPECT_EQ(enabled_count(), 9);
  set_log_channels("all,-perf,-guards");
  EXPECT_EQ(enabled_count(), 7);
  EXPECT_FALSE(log_enabled(LogChannel::Perf));
  EXPECT_FALSE(log_enabled(LogChannel::Guards));
  EXPECT_TRUE(log_enabled(LogChannel::Schedule));
}

TEST_F(LoggingTest, ToleratesSpacesCaseAndEmptyItems) {
  set_log_channels(" Graph , CACHE ,, ");
  EXPECT_TRUE(log_enabled(LogChannel::Graph));
  EXPECT_TRUE(log_enabled(LogChannel::Cache));
  EXPECT_EQ(enabled_count(), 2);
}

TEST_F(LoggingTest, UnknownNameIsAnErrorListingValidNames) {
  set_log_channels("graph");
  try {
    set_log_channels("graph,grpah");
    FAIL() << "an unknown channel must be an error";
  } catch (const kiln::Error& error) {
    EXPECT_EQ(error.kind(), kiln::ErrorKind::Value);
    std::string message = error.what();
    EXPECT_NE(message.find("grpah"), std::string::npos) << message;
    for (const char* name : {"graph_breaks", "output_code", "guards", "schedule", "all"})
      EXPECT_NE(message.find(name), std::string::npos) << name << " missing from: " << message;
  }
  EXPECT_TRUE(log_enabled(LogChannel::Graph));  // the previous choice stays
  EXPECT_EQ(enabled_count(), 1);
  EXPECT_THROW(kiln::api::channel_from_name("bogus"), kiln::Error);
  EXPECT_EQ(kiln::api::channel_from_name("perf"), LogChannel::Perf);
}

TEST_F(LoggingTest, LogWritesPrefixedLineOnlyWhenEnabled) {
  set_log_channels("cache");
  testing::internal::CaptureStderr();
  kiln::api::log(LogChannel::Cache, "hit 0123abcd");
  kiln::api::log(LogChannel::Graph, "not shown");
  kiln::api::log(LogChannel::Cache, "ends with newline\n");
  std::string output = testing::internal::GetCapturedStderr();
  EXPECT_EQ(output, "[kiln:cache] hit 0123abcd\n[kiln:cache] ends with newline\n");

  set_log_channels("output_code");
  testing::internal::CaptureStderr();
  kiln::api::log(LogChannel::OutputCode, "x");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "[kiln:output_code] x\n");
}

}  // namespace
