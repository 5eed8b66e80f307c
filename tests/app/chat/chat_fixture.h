// Reading the chat fixtures of tests/app/chat/data (templates, expected texts).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "testdata.h"

namespace kvforge::testing {

// The bytes of tests/app/chat/data/NAME; a test failure naming it when absent.
inline std::string read_chat_fixture(const std::string& name) {
  std::ifstream in(source_dir() / "tests/app/chat/data" / name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace kvforge::testing
