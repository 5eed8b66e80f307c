// Locating ../shared/testdata from tests. Tests that need it call
// KVFORGE_REQUIRE_TESTDATA(), which skips with a visible reason when absent.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace kvforge::testing {

inline std::filesystem::path testdata_dir() { return KVFORGE_TESTDATA_DIR; }
inline bool has_testdata() { return std::filesystem::is_directory(testdata_dir()); }
inline std::filesystem::path testdata(const std::string& rel) { return testdata_dir() / rel; }
inline std::filesystem::path source_dir() { return KVFORGE_SOURCE_DIR; }

}  // namespace kvforge::testing

#define KVFORGE_REQUIRE_TESTDATA()                                                      \
  do {                                                                                  \
    if (!::kvforge::testing::has_testdata())                                            \
      GTEST_SKIP() << "shared test data not found at " << KVFORGE_TESTDATA_DIR          \
                   << " (clone the project with ../shared beside it to run this test)"; \
  } while (0)
