// The example grammars shipped with llama.cpp compile unchanged and accept
// sample sentences. They are read from the llama.cpp checkout named by
// KVFORGE_LLAMA_GRAMMARS (default /work/llama-ref/llama.cpp/grammars, the
// development oracle); CI has none, and the test says so when it skips.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "grammar_test_util.h"

namespace kvforge {
namespace {

using grammar_test::accepts;

std::filesystem::path grammars_dir() {
  const char* env = std::getenv("KVFORGE_LLAMA_GRAMMARS");
  return env ? env : "/work/llama-ref/llama.cpp/grammars";
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LlamaGrammars, AllCompileAndAcceptSamples) {
  const auto dir = grammars_dir();
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no llama.cpp grammars at " << dir;
  int compiled = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gbnf") continue;
    SCOPED_TRACE(entry.path().string());
    auto c = std::make_shared<GrammarConstraint>(compile_gbnf(read(entry.path())),
                                                 grammar_test::byte_vocab());
    const std::string name = entry.path().stem().string();
    if (name == "json") {
      EXPECT_TRUE(accepts(*c, "{\"a\": [1, 2.5, \"x\\u00e9\"], \"b\": {\"c\": null}}"));
      EXPECT_FALSE(accepts(*c, "{\"a\": }"));
    } else if (name == "arithmetic") {
      EXPECT_TRUE(accepts(*c, "(a+2)*b=3\n"));
    } else if (name == "chess") {
      EXPECT_TRUE(accepts(*c, "1. e4 e5\n2. Nf3 Nc6\n"));
    } else if (name == "list") {
      EXPECT_TRUE(accepts(*c, "- one\n- two\n"));
    } else if (name == "c") {
      EXPECT_TRUE(accepts(*c, "int main(){return 0;}"));
    }
    ++compiled;
  }
  EXPECT_GE(compiled, 8);
}

}  // namespace
}  // namespace kvforge
