// ProgressLine when stderr is not a terminal (captured to a file here, as in
// CI logs):
// no carriage returns, at most one line per interval, the final state once.
#include "app/cli/progress_line.h"

#include <gtest/gtest.h>

#include <string>

namespace kvforge::cli {
namespace {

TEST(ProgressLine, LogsOnlyTheFinalStateWithinAnInterval) {
  ::testing::internal::CaptureStderr();
  {
    ProgressLine line(3600.0);
    for (int i = 1; i <= 100; ++i) line.update("step %d/100", i);
    line.finish();
    line.finish();  // idempotent
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "step 100/100\n");
}

TEST(ProgressLine, LogsEveryUpdateWithAZeroIntervalAndEndsWithoutRepeating) {
  ::testing::internal::CaptureStderr();
  {
    ProgressLine line(0.0);
    line.update("a %d", 1);
    line.update("b %s", "two");
  }  // the destructor finishes; "b two" is already in the log
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "a 1\nb two\n");
}

TEST(ProgressLine, PrintsNothingWithoutUpdates) {
  ::testing::internal::CaptureStderr();
  { ProgressLine line; }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace kvforge::cli
