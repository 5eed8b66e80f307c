// tests/ mirrors src/: the tests of src/<layer>/<dir>/ sit in tests/<layer>/<dir>/, so that
// a reader finds a piece's tests by its path. This test walks tests/ and fails on every file
// in a folder that has no counterpart under src/, naming the file. tests/ itself holds what
// every layer shares (CMakeLists.txt, testdata.h, sanitized.h), never a test.
//
// Allowed besides the mirror (keep this list short):
// - a folder named `data` below a mirrored folder holds fixtures (models, logits, tables) for
//   the tests beside it; test code (.cpp, .h, scripts) never goes there;
// - node_modules/ is what `npm ci` installs for tests/app/server (ignored by git).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "testdata.h"

namespace kvforge::test_layout {
namespace {

namespace fs = std::filesystem;

// Extensions of test code: such a file must sit in a mirrored folder, never under data/.
const std::set<std::string> kTestCodeExtensions = {".cpp", ".h", ".sh", ".mjs", ".py"};

// Why `rel` (a file's path relative to tests/) breaks the mirror, or "" if it does not.
std::string misplacement(const fs::path& rel, const fs::path& src_root) {
  fs::path mirrored;  // the folder whose counterpart under src/ must exist
  for (auto it = rel.begin(); it != rel.end() && std::next(it) != rel.end(); ++it) {
    if (*it == "node_modules") return "";
    if (*it == "data") {
      if (kTestCodeExtensions.count(rel.extension().string()))
        return "test code in a data folder (data/ holds fixtures only)";
      break;
    }
    mirrored /= *it;
  }
  if (mirrored.empty())
    return rel.filename().string().find("_test.") == std::string::npos
               ? ""
               : "a test at the top of tests/ (it belongs in the folder mirroring what it tests)";
  if (fs::is_directory(src_root / mirrored)) return "";
  return "tests/" + mirrored.string() + "/ has no counterpart src/" + mirrored.string() + "/";
}

// Every file under `tests_root` that breaks the mirror of `src_root`, with the reason.
std::vector<std::string> misplaced_files(const fs::path& tests_root, const fs::path& src_root) {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(tests_root);
       it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && it->path().filename() == "node_modules") {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    const fs::path rel = fs::relative(it->path(), tests_root);
    const std::string why = misplacement(rel, src_root);
    if (!why.empty()) out.push_back("tests/" + rel.string() + ": " + why);
  }
  return out;
}

TEST(TestLayout, TestsMirrorSrc) {
  const fs::path root = testing::source_dir();
  for (const std::string& file : misplaced_files(root / "tests", root / "src"))
    ADD_FAILURE() << file;
}

// The checker itself: a test in an unmirrored folder or at the top, and test code under data/,
// are caught; mirrored folders, data fixtures and the shared files at the top are not.
TEST(TestLayout, TheCheckerCatchesUnmirroredFolders) {
  const fs::path dir =
      fs::temp_directory_path() / ("kvforge_test_layout_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const char* folder : {"src/engine/kv", "tests/engine/kv/data", "tests/engine/kvcache",
                             "tests/engine/kv/node_modules/x"})
    fs::create_directories(dir / folder);
  for (const char* file : {"tests/CMakeLists.txt", "tests/testdata.h", "tests/stray_test.cpp",
                           "tests/engine/kv/block_test.cpp", "tests/engine/kv/data/a.bin",
                           "tests/engine/kvcache/block_test.cpp", "tests/engine/kv/data/helper.h",
                           "tests/engine/kv/node_modules/x/index.mjs"})
    std::ofstream(dir / file) << "\n";
  const std::vector<std::string> found = misplaced_files(dir / "tests", dir / "src");
  fs::remove_all(dir);
  ASSERT_EQ(found.size(), 3u) << ::testing::PrintToString(found);
  const std::set<std::string> files(found.begin(), found.end());
  EXPECT_TRUE(
      files.count("tests/engine/kvcache/block_test.cpp: tests/engine/kvcache/ has no "
                  "counterpart src/engine/kvcache/"));
  EXPECT_TRUE(files.count(
      "tests/engine/kv/data/helper.h: test code in a data folder (data/ holds fixtures only)"));
  EXPECT_TRUE(
      files.count("tests/stray_test.cpp: a test at the top of tests/ (it belongs in the "
                  "folder mirroring what it tests)"));
}

}  // namespace
}  // namespace kvforge::test_layout
