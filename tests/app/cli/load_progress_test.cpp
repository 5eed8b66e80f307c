// The load progress line (issue 40: a 2.4 GB file showed nothing for 9 s):
// silent for a fast load, a line and a final "loaded ... in" for a slow one.
#include "app/cli/load_progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace kvforge::cli {
namespace {

TEST(LoadProgress, SilentForALoadFasterThanTheThreshold) {
  ::testing::internal::CaptureStderr();
  bool ran = false;
  with_load_progress("m.gguf", 5.0, [&] { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(LoadProgress, ShowsTheLoadAndItsEndPastTheThreshold) {
  ::testing::internal::CaptureStderr();
  with_load_progress("m.gguf (2.40 GiB)", 0.05,
                     [] { std::this_thread::sleep_for(std::chrono::milliseconds(400)); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("loading m.gguf (2.40 GiB)..."), std::string::npos) << err;
  EXPECT_NE(err.find("loaded m.gguf (2.40 GiB) in "), std::string::npos) << err;
}

TEST(LoadProgress, EndsTheLineWhenTheLoadThrows) {
  ::testing::internal::CaptureStderr();
  EXPECT_THROW(with_load_progress("bad.gguf", 0.01,
                                  [] {
                                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                                    throw std::runtime_error("truncated");
                                  }),
               std::runtime_error);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.back(), '\n') << err;
}

}  // namespace
}  // namespace kvforge::cli
