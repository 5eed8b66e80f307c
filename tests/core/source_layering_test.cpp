// The layer rule of DESIGN.md, enforced: core -> model -> engine -> app,
// dependencies pointing downward only. Every layer's library sees `src/` as
// an include path, so an upward include would compile; this test reads every
// header and source under src/ and include/ and fails on one, naming the file,
// the line and the rule. The public headers (include/kvforge/) sit at the
// engine layer, which implements them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "testdata.h"

namespace kvforge {
namespace {

const std::map<std::string, int> kLayerRank = {
    {"core", 0}, {"model", 1}, {"engine", 2}, {"kvforge", 2}, {"app", 3}};

// The layer a path under src/ or include/ belongs to ("" if none).
std::string layer_of(const std::filesystem::path& rel) {
  auto it = rel.begin();
  if (it == rel.end()) return "";
  const std::string top = it->string();
  if (top == "include") return "kvforge";
  if (top != "src" || ++it == rel.end()) return "";
  return it->string();
}

// The quoted path of an `#include "..."` line, or "" for any other line.
// (Parsed by hand: std::regex trips a -Wmaybe-uninitialized false positive
// in GCC 12's <functional> under the sanitizer build.)
std::string quoted_include(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return "";
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos || line.compare(i, 7, "include") != 0) return "";
  i = line.find_first_not_of(" \t", i + 7);
  if (i == std::string::npos || line[i] != '"') return "";
  const size_t end = line.find('"', i + 1);
  return end == std::string::npos ? "" : line.substr(i + 1, end - i - 1);
}

struct Violation {
  std::string where;  // file:line
  std::string what;
};

// Upward includes in `text`, a file of layer `layer` (at `where`).
std::vector<Violation> upward_includes(const std::string& where, const std::string& layer,
                                       std::istream& text) {
  std::vector<Violation> out;
  std::string line;
  for (int n = 1; std::getline(text, line); ++n) {
    const std::string inc = quoted_include(line);
    const std::string top = inc.substr(0, inc.find('/'));
    const auto target = kLayerRank.find(top);
    if (target == kLayerRank.end()) continue;
    if (target->second > kLayerRank.at(layer))
      out.push_back(
          {where + ":" + std::to_string(n), layer + " must not include " + top + ": " + line});
  }
  return out;
}

TEST(SourceLayering, NoLayerIncludesALayerAboveIt) {
  const std::filesystem::path root = testing::source_dir();
  size_t files = 0;
  std::vector<Violation> found;
  for (const char* top : {"src", "include"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / top)) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
      const std::filesystem::path rel = std::filesystem::relative(e.path(), root);
      const std::string layer = layer_of(rel);
      ASSERT_TRUE(kLayerRank.count(layer)) << rel << " is in no layer";
      std::ifstream in(e.path());
      for (Violation& v : upward_includes(rel.string(), layer, in)) found.push_back(v);
      ++files;
    }
  }
  EXPECT_GT(files, 100u);
  for (const Violation& v : found) ADD_FAILURE() << v.where << ": " << v.what;
}

// MPI stays inside core/comm/: only the files named *_mpi.cpp (built only
// when CMake finds MPI) include mpi.h; everything else sees Communicator.
TEST(SourceLayering, OnlyMpiFilesIncludeMpiHeader) {
  const std::filesystem::path root = testing::source_dir();
  for (const char* top : {"src", "include", "tests"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / top)) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
      if (e.path().filename().string().ends_with("_mpi.cpp")) continue;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);)
        if (line.starts_with("#include <mpi.h>") || line.starts_with("#include \"mpi.h\""))
          ADD_FAILURE() << std::filesystem::relative(e.path(), root)
                        << " includes mpi.h; only core/comm/*_mpi.cpp may";
    }
  }
}

// The public headers expose public types only: they include one another,
// the standard library and KvFormat (a value type the options carry), never
// the engine's, model's or app's internals.
TEST(SourceLayering, PublicHeadersIncludeOnlyPublicTypes) {
  const std::filesystem::path dir = testing::source_dir() / "include/kvforge";
  size_t headers = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const std::string inc = quoted_include(line);
      if (inc.empty()) continue;
      EXPECT_TRUE(inc.rfind("kvforge/", 0) == 0 || inc == "core/formats/kv_format.h")
          << e.path().filename().string() << ":" << n << " includes " << inc;
    }
    ++headers;
  }
  EXPECT_GE(headers, 3u);
}

// The checker itself catches what it must, and leaves sideways and downward includes alone.
TEST(SourceLayering, TheCheckerSeesUpwardIncludesOnly) {
  std::istringstream text(
      "#include \"core/dtype.h\"\n#include \"model/model.h\"\n#include <vector>\n"
      "  #  include \"app/text_engine.h\"\n#include \"engine/sequence.h\"\n");
  const auto v = upward_includes("src/model/x.cpp", "model", text);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].where, "src/model/x.cpp:4");
  EXPECT_EQ(v[1].where, "src/model/x.cpp:5");
  EXPECT_EQ(layer_of("include/kvforge/engine.h"), "kvforge");
  EXPECT_EQ(layer_of("src/core/formats/q4_k.h"), "core");
}

}  // namespace
}  // namespace kvforge
