// The Responses API's store (response_store.h) and its file (response_store_file.h):
// bounded by count and bytes with LRU eviction, and a file that round-trips,
// or is refused with its name when it is not one.
#include "app/server/response_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "app/server/response_store_file.h"

namespace kvforge::server {
namespace {

std::shared_ptr<StoredResponse> response(const std::string& text, size_t ids = 4) {
  auto r = std::make_shared<StoredResponse>();
  r->object = {{"id", "x"}, {"output_text", text}};
  r->messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", text}}});
  r->prompt_text = "User: " + text;
  r->prompt_ids.assign(ids, 7);
  r->output_ids = {1, 2, 3};
  r->output_text = text;
  return r;
}

TEST(ResponseStore, PutGetEraseAndUnknownIds) {
  ResponseStore store({10, 1 << 20});
  EXPECT_TRUE(store.put("a", response("alpha")));
  ASSERT_NE(store.get("a"), nullptr);
  EXPECT_EQ(store.get("a")->output_text, "alpha");
  EXPECT_EQ(store.get("b"), nullptr);
  EXPECT_FALSE(store.erase("b"));
  EXPECT_TRUE(store.erase("a"));
  EXPECT_EQ(store.get("a"), nullptr);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
}

TEST(ResponseStore, CountBoundEvictsLeastRecentlyUsed) {
  ResponseStore store({3, 1 << 20});
  for (const char* id : {"a", "b", "c"}) store.put(id, response(id));
  ASSERT_NE(store.get("a"), nullptr);  // "b" is now the least recently used
  store.put("d", response("d"));
  EXPECT_EQ(store.size(), 3u);
  EXPECT_EQ(store.get("b"), nullptr);
  for (const char* id : {"a", "c", "d"}) EXPECT_NE(store.get(id), nullptr) << id;
}

TEST(ResponseStore, ByteBoundHoldsOverTenThousandPuts) {
  const size_t one = response("x", 100)->bytes() + 16;
  ResponseStore store({100000, one * 50});
  for (int i = 0; i < 10000; ++i) store.put("resp_" + std::to_string(i), response("x", 100));
  EXPECT_LE(store.bytes(), one * 50);
  EXPECT_GE(store.size(), 40u);
  EXPECT_LE(store.size(), 50u);
  EXPECT_NE(store.get("resp_9999"), nullptr);
  EXPECT_EQ(store.get("resp_0"), nullptr);
}

TEST(ResponseStore, AnEntryLargerThanTheBoundIsNotStored) {
  ResponseStore store({10, 2000});
  EXPECT_TRUE(store.put("small", response("s")));
  EXPECT_FALSE(store.put("big", response("b", 1000)));  // 4000 bytes of ids alone
  EXPECT_EQ(store.get("big"), nullptr);
  EXPECT_NE(store.get("small"), nullptr);
}

TEST(ResponseStore, ReplacingAnIdCountsItOnce) {
  ResponseStore store({10, 1 << 20});
  store.put("a", response("one"));
  const size_t bytes = store.bytes();
  store.put("a", response("two"));
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.bytes(), bytes);
  EXPECT_EQ(store.get("a")->output_text, "two");
}

class ResponseStoreFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kvforge-response-store-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ResponseStoreFile, RoundTripKeepsEntriesAndTheirOrder) {
  ResponseStore store({10, 1 << 20});
  for (const char* id : {"a", "b", "c"}) store.put(id, response(id));
  store.get("a");  // most recently used: last in the file
  const auto file = response_store_path(dir_, "0123");
  save_response_store(file, "0123", store);
  ResponseStore back({10, 1 << 20});
  load_response_store(file, "0123", back);
  const auto entries = back.entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].first, "b");
  EXPECT_EQ(entries[2].first, "a");
  EXPECT_EQ(entries[2].second->prompt_ids, store.get("a")->prompt_ids);
  EXPECT_EQ(entries[2].second->messages, store.get("a")->messages);
  EXPECT_EQ(back.bytes(), store.bytes());
}

TEST_F(ResponseStoreFile, AMissingFileIsAnEmptyStore) {
  ResponseStore store({10, 1 << 20});
  load_response_store(dir_ / "none.json", "0123", store);
  EXPECT_EQ(store.size(), 0u);
}

TEST_F(ResponseStoreFile, CorruptOrForeignFilesAreErrorsNamingTheFile) {
  const auto file = dir_ / "responses.json";
  for (const std::string& text :
       {std::string("{\"kvforge_response_store\": 1, \"model\": \"0123\", \"responses\": [{"),
        std::string("[1, 2]"),
        std::string("{\"kvforge_response_store\": 1, \"model\": \"other\", \"responses\": []}"),
        std::string("{\"kvforge_response_store\": 1, \"model\": \"0123\", \"responses\": "
                    "[{\"id\": \"a\", \"object\": 3}]}")}) {
    std::ofstream(file) << text;
    ResponseStore store({10, 1 << 20});
    try {
      load_response_store(file, "0123", store);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ResponseStoreFileError& e) {
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    }
    EXPECT_EQ(store.size(), 0u);
  }
}

}  // namespace
}  // namespace kvforge::server
