// The disk tier and its block files: round trip, persistence, every fault a
// file can have (each rejected, counted and deleted), LRU by size, and I/O
// failures degrading to RAM-only with one warning.
#include "engine/kv/kv_disk_tier.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "engine/kv/kv_checksum.h"
#include "engine/kv/prefix_cache.h"
#include "file_size_limit.h"
#include "temp_dir.h"

namespace kvforge {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

KvBlockIdentity identity(KvFormat f = {KvDtype::F16, KvDtype::F16}, uint64_t model = 42) {
  return {model, f, 4, 96};
}

std::vector<int32_t> prefix(int n, int salt = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[size_t(i)] = 7 + i * 3 + salt;
  return t;
}

std::vector<uint8_t> payload(uint8_t seed) {
  std::vector<uint8_t> p(96);
  for (size_t i = 0; i < p.size(); ++i) p[i] = uint8_t(seed + i * 13);
  return p;
}

uint64_t hash_of(const std::vector<int32_t>& tokens, int block_size = 4) {
  uint64_t h = PrefixCache::kRootHash;
  for (size_t i = 0; i + size_t(block_size) <= tokens.size(); i += size_t(block_size))
    h = PrefixCache::chain_hash(h, std::span(tokens).subspan(i, size_t(block_size)));
  return h;
}

struct Warnings {
  std::vector<std::string> seen;
  KvDiskTier::WarnFn fn() {
    return [this](const std::string& m) { seen.push_back(m); };
  }
};

TEST(KvChecksum, MatchesXxh64ReferenceValues) {
  EXPECT_EQ(xxh64("", 0), 0xef46db3751d8e999ull);
  EXPECT_EQ(xxh64("abc", 3), 0x44bc2cf5ad770999ull);
  // Streaming in odd pieces gives the one-shot value.
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7);
  Xxh64 h;
  for (size_t at = 0, step = 1; at < data.size(); at += step, step = step * 2 + 1)
    h.update(data.data() + at, std::min(step, data.size() - at));
  EXPECT_EQ(h.digest(), xxh64(data.data(), data.size()));
}

TEST(KvDiskTier, StoresLoadsAndSurvivesANewInstance) {
  TempDir dir("kvforge-disk-tier");
  const auto toks = prefix(8);
  const auto pay = payload(3);
  {
    KvDiskTier tier(dir.path, 1 << 20, identity());
    ASSERT_TRUE(tier.enabled());
    EXPECT_FALSE(tier.contains(hash_of(toks)));
    ASSERT_TRUE(tier.store(hash_of(toks), toks, pay));
    EXPECT_TRUE(tier.contains(hash_of(toks)));
    EXPECT_EQ(tier.stats().blocks_stored, 1);
  }
  KvDiskTier again(dir.path, 1 << 20, identity());
  EXPECT_EQ(again.stats().files, 1);
  std::vector<uint8_t> out(96);
  ASSERT_TRUE(again.load(hash_of(toks), toks, out));
  EXPECT_EQ(out, pay);
  EXPECT_EQ(again.stats().hits, 1);
  EXPECT_GT(again.stats().bytes_read, 96);
  // The file name is hex digits only, whatever the tokens were.
  const std::string name = again.path_of(hash_of(toks)).filename().string();
  EXPECT_EQ(name.size(), 16u + 1 + 16 + 4);
}

// O_DIRECT reads whole aligned chunks and takes the file's short tail: files
// below, above and exactly at the alignment load the same bytes as a
// buffered read, and a truncated one is still rejected.
TEST(KvDiskTier, ReadsTheSameBlocksBufferedAndWithODirect) {
  TempDir dir("kvforge-disk-tier");
  // 64 header + 4 * n ids + 96 payload + 8 checksum bytes: 200, 4096 and 4968.
  const std::vector<int> lengths = {8, 982, 1200};
  {
    KvDiskTier tier(dir.path, 1 << 20, identity());
    for (const int n : lengths)
      ASSERT_TRUE(tier.store(hash_of(prefix(n)), prefix(n), payload(uint8_t(n))));
  }
  ASSERT_EQ(fs::file_size(KvDiskTier(dir.path, 1 << 20, identity()).path_of(hash_of(prefix(982)))),
            BlockFileReader::kAlignment);
  for (const KvReadMode mode : {KvReadMode::kBuffered, KvReadMode::kDirect}) {
    KvDiskTier tier(dir.path, 1 << 20, identity());
    tier.set_read_mode(mode);
    for (const int n : lengths) {
      std::vector<uint8_t> out(96);
      ASSERT_TRUE(tier.load(hash_of(prefix(n)), prefix(n), out)) << n << " tokens";
      EXPECT_EQ(out, payload(uint8_t(n))) << n << " tokens";
    }
    EXPECT_EQ(tier.stats().bytes_read, 200 + 4096 + 4968);
  }
  KvDiskTier tier(dir.path, 1 << 20, identity());
  fs::resize_file(tier.path_of(hash_of(prefix(1200))), 4968 - 1);
  tier.set_read_mode(KvReadMode::kDirect);
  std::vector<uint8_t> out(96);
  EXPECT_FALSE(tier.load(hash_of(prefix(1200)), prefix(1200), out));
  EXPECT_EQ(tier.stats().files_rejected, 1);
}

// Writes a valid file, lets `damage` change it on disk, then loads it in a
// fresh tier (as a restarted process would) expecting a rejection.
void expect_rejected(const std::function<void(const fs::path&)>& damage,
                     KvBlockIdentity load_id = identity(), std::vector<int32_t> ask = prefix(8)) {
  TempDir dir("kvforge-disk-tier");
  const auto toks = prefix(8);
  {
    KvDiskTier tier(dir.path, 1 << 20, identity());
    ASSERT_TRUE(tier.store(hash_of(toks), toks, payload(5)));
    damage(tier.path_of(hash_of(toks)));
  }
  Warnings w;
  KvDiskTier tier(dir.path, 1 << 20, load_id, w.fn());
  std::vector<uint8_t> out(96);
  EXPECT_FALSE(tier.load(hash_of(toks), ask, out));
  EXPECT_EQ(tier.stats().files_rejected, 1);
  EXPECT_EQ(tier.stats().hits, 0);
  EXPECT_FALSE(fs::exists(tier.path_of(hash_of(toks))));
  EXPECT_FALSE(tier.contains(hash_of(toks)));
  EXPECT_TRUE(tier.enabled()) << "a bad file is not an I/O error";
  EXPECT_TRUE(w.seen.empty());
}

TEST(KvDiskTier, RejectsATruncatedFile) {
  expect_rejected([](const fs::path& p) { fs::resize_file(p, fs::file_size(p) - 10); });
  expect_rejected([](const fs::path& p) { fs::resize_file(p, 20); });
  expect_rejected([](const fs::path& p) { fs::resize_file(p, 0); });
}

TEST(KvDiskTier, RejectsAFileLongerThanItsBlock) {
  expect_rejected([](const fs::path& p) { fs::resize_file(p, fs::file_size(p) + 1); });
  expect_rejected([](const fs::path& p) { fs::resize_file(p, uint64_t(1) << 19); });  // sparse
}

TEST(KvDiskTier, RejectsABitFlipAnywhere) {
  for (const long at : {3L, 40L, 70L, 150L, -1L}) {
    expect_rejected([at](const fs::path& p) {
      std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
      const long size = long(fs::file_size(p));
      const long pos = at < 0 ? size - 1 : at;
      f.seekg(pos);
      char c;
      f.read(&c, 1);
      c ^= 0x10;
      f.seekp(pos);
      f.write(&c, 1);
    });
  }
}

// A file written for another model or KV format, renamed to our name.
TEST(KvDiskTier, RejectsAnotherModelOrFormat) {
  const auto toks = prefix(8);
  for (const KvBlockIdentity& other :
       {identity({KvDtype::F16, KvDtype::F16}, 43), identity({KvDtype::Int8, KvDtype::Int8})}) {
    expect_rejected([&](const fs::path& p) {
      const std::vector<uint8_t> bytes = encode_block_file(other, hash_of(toks), toks, payload(1));
      std::ofstream(p, std::ios::binary | std::ios::trunc)
          .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    });
  }
}

TEST(KvDiskTier, RejectsOtherTokensUnderTheSameHash) {
  // The ids asked for differ from the file's (as a hash collision would).
  expect_rejected([](const fs::path&) {}, identity(), prefix(8, 1));
}

TEST(KvDiskTier, KeepsItsSizeLimitLeastRecentlyUsedFirst) {
  TempDir dir("kvforge-disk-tier");
  const size_t file = block_file_bytes(identity(), 8);
  KvDiskTier tier(dir.path, 3 * file, identity());
  std::vector<std::vector<int32_t>> p;
  for (int i = 0; i < 3; ++i) {
    p.push_back(prefix(8, 100 * i));
    ASSERT_TRUE(tier.store(hash_of(p.back()), p.back(), payload(uint8_t(i))));
  }
  std::vector<uint8_t> out(96);
  ASSERT_TRUE(tier.load(hash_of(p[0]), p[0], out));  // p[1] is now the oldest
  p.push_back(prefix(8, 300));
  ASSERT_TRUE(tier.store(hash_of(p[3]), p[3], payload(3)));
  EXPECT_TRUE(tier.contains(hash_of(p[0])));
  EXPECT_FALSE(tier.contains(hash_of(p[1])));
  EXPECT_FALSE(fs::exists(tier.path_of(hash_of(p[1]))));
  EXPECT_EQ(tier.stats().files, 3);
  EXPECT_EQ(tier.stats().files_evicted, 1);
  EXPECT_LE(uint64_t(tier.stats().bytes_on_disk), 3 * file);
  // A restart with a smaller limit trims to it.
  KvDiskTier smaller(dir.path, file, identity());
  EXPECT_EQ(smaller.stats().files, 1);
}

TEST(KvDiskTier, LeavesOtherModelsFilesAloneAndCleansDeadWritersTemporaries) {
  TempDir dir("kvforge-disk-tier");
  const auto toks = prefix(8);
  KvDiskTier other(dir.path, 1 << 20, identity({KvDtype::F16, KvDtype::F16}, 7));
  ASSERT_TRUE(other.store(hash_of(toks), toks, payload(1)));
  // A temporary of a writer that no longer runs (pid 2^22 + 1 is above pid_max's default).
  char name[128];
  std::snprintf(name, sizeof name, ".tmp-%016llx-%016llx-%d.kvb",
                (unsigned long long)identity().fingerprint(), 5ull, (1 << 22) + 1);
  std::ofstream(dir.path / name) << "partial";
  KvDiskTier ours(dir.path, 1 << 20, identity());
  EXPECT_EQ(ours.stats().files, 0);
  EXPECT_FALSE(fs::exists(dir.path / name));
  EXPECT_TRUE(fs::exists(other.path_of(hash_of(toks))));
}

TEST(KvDiskTier, AnUnusableDirectoryDegradesWithOneWarning) {
  TempDir dir("kvforge-disk-tier");
  const fs::path not_a_dir = dir.path / "file";
  std::ofstream(not_a_dir) << "x";
  Warnings w;
  KvDiskTier tier(not_a_dir / "kv", 1 << 20, identity(), w.fn());
  EXPECT_FALSE(tier.enabled());
  EXPECT_TRUE(tier.stats().degraded);
  const auto toks = prefix(8);
  EXPECT_FALSE(tier.store(hash_of(toks), toks, payload(1)));
  EXPECT_FALSE(tier.store(hash_of(toks), toks, payload(1)));
  EXPECT_EQ(w.seen.size(), 1u);
}

// Runs `body` as the unprivileged user nobody (uid and gid 65534) in a child
// process when this one is root, since root ignores directory permissions;
// in place otherwise. True when body returned true.
bool as_unprivileged(const std::function<bool()>& body) {
  if (::geteuid() != 0) return body();
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    // No supplementary groups: root's group 0 would otherwise grant the group bits.
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    ::_exit(body() ? 0 : 1);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(KvDiskTier, AReadOnlyDirectoryDegradesWithOneWarning) {
  TempDir dir("kvforge-disk-tier");
  // Readable and searchable by everyone (so by nobody too), writable by no one.
  fs::permissions(dir.path, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                fs::perms::group_exec | fs::perms::others_read |
                                fs::perms::others_exec);
  const bool degraded_once = as_unprivileged([&] {
    Warnings w;
    KvDiskTier tier(dir.path, 1 << 20, identity(), w.fn());
    const auto toks = prefix(8);
    const bool first = tier.store(hash_of(toks), toks, payload(1));
    const bool second = tier.store(hash_of(prefix(8, 1)), prefix(8, 1), payload(1));
    return !first && !second && tier.stats().degraded && w.seen.size() == 1;
  });
  fs::permissions(dir.path, fs::perms::owner_all);
  EXPECT_TRUE(degraded_once) << "a read-only directory: two failed stores, degraded, one warning";
}

// A full disk, simulated with a file-size limit below one block file: the
// write fails (EFBIG) part way, leaving no file behind.
TEST(KvDiskTier, AFullDiskDegradesWithOneWarning) {
  TempDir dir("kvforge-disk-tier");
  Warnings w;
  KvDiskTier tier(dir.path, 1 << 20, identity(), w.fn());
  const auto toks = prefix(8);
  bool stored;
  {
    const testing::FileSizeLimit full_disk(100);
    ASSERT_TRUE(full_disk.applied());
    stored = tier.store(hash_of(toks), toks, payload(1));
  }
  EXPECT_FALSE(stored);
  EXPECT_TRUE(tier.stats().degraded);
  EXPECT_EQ(tier.stats().io_errors, 1);
  EXPECT_FALSE(tier.store(hash_of(prefix(8, 1)), prefix(8, 1), payload(1)));
  EXPECT_EQ(w.seen.size(), 1u);
  EXPECT_TRUE(fs::is_empty(dir.path)) << "no partial file is left";
}

}  // namespace
}  // namespace kvforge
