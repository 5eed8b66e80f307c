// The load progress line (issue 40: a 2.4 GB file showed nothing for 9 s):
// silent for a fast load, a line and a final "loaded ... in" for a slow one,
// with the fraction Model::load reports.
#include "app/cli/load_progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "model/model.h"
#include "testdata.h"

namespace kvforge::cli {
namespace {

TEST(LoadProgress, SilentForALoadFasterThanTheThreshold) {
  ::testing::internal::CaptureStderr();
  bool ran = false;
  with_load_progress("m.gguf", 5.0, [&](const LoadReport&) { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(LoadProgress, ShowsTheLoadAndItsEndPastTheThreshold) {
  ::testing::internal::CaptureStderr();
  with_load_progress("m.gguf (2.40 GiB)", 0.05, [](const LoadReport&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("loading m.gguf (2.40 GiB)..."), std::string::npos) << err;
  EXPECT_NE(err.find("loaded m.gguf (2.40 GiB) in "), std::string::npos) << err;
}

// The fraction the load reports is on the line; a real load reports 1 at its end.
TEST(LoadProgress, ShowsTheFractionTheLoadReports) {
  ::testing::internal::CaptureStderr();
  with_load_progress("m.gguf", 0.05, [](const LoadReport& report) {
    report(0.25);
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("loading m.gguf...  25 %"), std::string::npos) << err;
  std::vector<double> heard;
  const auto dir = testing::source_dir() / "models";
  Model::load(dir / "kvforge-kjv-4m.gguf", nullptr, [&](double f) { heard.push_back(f); });
  ASSERT_FALSE(heard.empty());
  EXPECT_TRUE(std::is_sorted(heard.begin(), heard.end()));
  EXPECT_EQ(heard.back(), 1.0);
}

TEST(LoadProgress, EndsTheLineWhenTheLoadThrows) {
  ::testing::internal::CaptureStderr();
  EXPECT_THROW(with_load_progress("bad.gguf", 0.01,
                                  [](const LoadReport&) {
                                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                                    throw std::runtime_error("truncated");
                                  }),
               std::runtime_error);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.back(), '\n') << err;
}

}  // namespace
}  // namespace kvforge::cli
