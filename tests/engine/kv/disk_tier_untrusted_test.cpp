// The disk tier's directory is untrusted: links (symbolic or hard), FIFOs and
// directories under block names are skipped by the scan, refused unread when swapped in after
// it, never followed (the files they point to keep their bytes and times),
// and cost only their own block, never the tier; a file-size limit turns
// the tier off instead of killing the process.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <functional>
#include <sstream>

#include "engine/kv/kv_disk_tier.h"
#include "engine/kv/prefix_cache.h"
#include "fifo_watchdog.h"
#include "temp_dir.h"

namespace kvforge {
namespace disk_tier_untrusted_test {  // named: the tests build in unity batches

namespace fs = std::filesystem;
using testing::FifoWatchdog;
using testing::TempDir;

constexpr std::chrono::seconds kPatience{10};  // far above any read of these files

KvBlockIdentity identity() { return {42, {KvDtype::F16, KvDtype::F16}, 4, 96}; }

std::vector<int32_t> prefix(int salt) {
  std::vector<int32_t> t(8);
  for (int i = 0; i < 8; ++i) t[size_t(i)] = 7 + i * 3 + salt;
  return t;
}

std::vector<uint8_t> payload(uint8_t seed) {
  std::vector<uint8_t> p(96);
  for (size_t i = 0; i < p.size(); ++i) p[i] = uint8_t(seed + i * 13);
  return p;
}

uint64_t hash_of(const std::vector<int32_t>& tokens) {
  uint64_t h = PrefixCache::kRootHash;
  for (size_t i = 0; i + 4 <= tokens.size(); i += 4)
    h = PrefixCache::chain_hash(h, std::span(tokens).subspan(i, 4));
  return h;
}

struct Warnings {
  std::vector<std::string> seen;
  KvDiskTier::WarnFn fn() {
    return [this](const std::string& m) { seen.push_back(m); };
  }
};

// A file's size, a digest of its bytes and its modification time
// (nanoseconds), through links.
struct Snapshot {
  size_t size = 0, digest = 0;
  int64_t mtime_ns = 0;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(const fs::path& p) {
  std::ostringstream text;
  text << std::ifstream(p, std::ios::binary).rdbuf();
  Snapshot s{text.str().size(), std::hash<std::string>{}(text.str())};
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0)
    s.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  return s;
}

void PrintTo(const Snapshot& s, std::ostream* os) {
  *os << s.size << " bytes, digest " << s.digest << ", mtime " << s.mtime_ns << " ns";
}

// Files outside the tier's directory that planted links point to: a valid
// block file of ours (as if moved out of the directory) and a stand-in for
// /etc/passwd. Their times are set in the past so a touch would show.
struct Outside {
  TempDir dir{"kvforge-disk-outside"};
  fs::path block = dir.path / "block.kvb";    // for a symbolic link
  fs::path linked = dir.path / "linked.kvb";  // for a hard link (/tmp, like the tier)
  fs::path passwd = dir.path / "passwd";

  Outside(const std::vector<int32_t>& block_tokens, const std::vector<int32_t>& linked_tokens) {
    {
      KvDiskTier writer(dir.path, 1 << 20, identity());
      EXPECT_TRUE(writer.store(hash_of(block_tokens), block_tokens, payload(9)));
      EXPECT_TRUE(writer.store(hash_of(linked_tokens), linked_tokens, payload(8)));
      fs::rename(writer.path_of(hash_of(block_tokens)), block);
      fs::rename(writer.path_of(hash_of(linked_tokens)), linked);
    }
    std::ofstream(passwd) << "root:x:0:0:root:/root:/bin/bash\n";
    const timespec past[2] = {{1000000000, 0}, {1000000000, 0}};
    for (const fs::path& p : {block, linked, passwd}) ::utimensat(AT_FDCWD, p.c_str(), past, 0);
  }
  std::vector<Snapshot> now() const {
    return {snapshot(block), snapshot(linked), snapshot(passwd)};
  }
};

// Puts a FIFO, a directory, a link to `outside.block`, a link to
// `outside.passwd` and a hard link to `outside.linked` under the names of
// five blocks of `tier_dir`; returns the FIFO's path.
struct Planted {
  std::vector<int32_t> fifo = prefix(1), dir = prefix(2), link_out = prefix(3),
                       link_passwd = prefix(4), hard_link = prefix(5);
  std::vector<std::vector<int32_t>> all() const {
    return {fifo, dir, link_out, link_passwd, hard_link};
  }

  fs::path plant(const KvDiskTier& tier, const Outside& outside) const {
    for (const auto& p : all()) fs::remove(tier.path_of(hash_of(p)));
    const fs::path f = tier.path_of(hash_of(fifo));
    EXPECT_EQ(::mkfifo(f.c_str(), 0644), 0);
    fs::create_directory(tier.path_of(hash_of(dir)));
    std::ofstream(tier.path_of(hash_of(dir)) / "inside") << "x";  // not empty
    fs::create_symlink(outside.block, tier.path_of(hash_of(link_out)));
    fs::create_symlink(outside.passwd, tier.path_of(hash_of(link_passwd)));
    fs::create_hard_link(outside.linked, tier.path_of(hash_of(hard_link)));
    return f;
  }
};

TEST(DiskTierUntrusted, TheScanSkipsLinksFifosAndDirectoriesUnderBlockNames) {
  TempDir dir("kvforge-disk-untrusted");
  const Planted planted;
  const Outside outside(planted.link_out, planted.hard_link);
  const std::vector<Snapshot> outside_before = outside.now();
  const auto good = prefix(0);
  fs::path fifo;
  {
    KvDiskTier writer(dir.path, 1 << 20, identity());
    ASSERT_TRUE(writer.store(hash_of(good), good, payload(0)));
    fifo = planted.plant(writer, outside);
  }
  Warnings w;
  KvDiskTier tier(dir.path, 1 << 20, identity(), w.fn());
  EXPECT_EQ(tier.stats().files, 1) << "only the regular file is indexed";
  EXPECT_EQ(tier.stats().bytes_on_disk, int64_t(block_file_bytes(identity(), 8)));
  for (const auto& p : planted.all()) ASSERT_FALSE(tier.contains(hash_of(p)));
  {
    const FifoWatchdog watchdog({fifo}, kPatience);
    std::vector<uint8_t> out(96);
    for (const auto& p : planted.all()) EXPECT_FALSE(tier.load(hash_of(p), p, out));
    EXPECT_TRUE(tier.load(hash_of(good), good, out));
    EXPECT_EQ(out, payload(0));
    EXPECT_FALSE(watchdog.fired()) << "a read blocked on the FIFO";
  }
  EXPECT_TRUE(tier.enabled());
  EXPECT_TRUE(w.seen.empty());
  EXPECT_EQ(tier.stats().bytes_read, int64_t(block_file_bytes(identity(), 8)));
  // Skipped, not deleted: they are not ours to judge unread.
  for (const auto& p : planted.all())
    EXPECT_TRUE(fs::exists(fs::symlink_status(tier.path_of(hash_of(p)))));
  EXPECT_EQ(outside.now(), outside_before);
}

// The same entries swapped in after the scan indexed regular files there (as
// another process sharing the directory could): each read refuses its entry
// unread, counts it as rejected and removes it (a link itself, never its
// target); the tier stays on.
TEST(DiskTierUntrusted, EntriesSwappedInAfterTheScanAreRefusedUnread) {
  TempDir dir("kvforge-disk-untrusted");
  const Planted planted;
  const Outside outside(planted.link_out, planted.hard_link);
  const std::vector<Snapshot> outside_before = outside.now();
  const auto good = prefix(0);
  Warnings w;
  KvDiskTier tier(dir.path, 1 << 20, identity(), w.fn());
  ASSERT_TRUE(tier.store(hash_of(good), good, payload(0)));
  for (const auto& p : planted.all()) ASSERT_TRUE(tier.store(hash_of(p), p, payload(5)));
  const fs::path fifo = planted.plant(tier, outside);
  {
    const FifoWatchdog watchdog({fifo}, kPatience);
    std::vector<uint8_t> out(96);
    for (const auto& p : planted.all()) {
      ASSERT_TRUE(tier.contains(hash_of(p)));
      EXPECT_FALSE(tier.load(hash_of(p), p, out));
      EXPECT_FALSE(tier.contains(hash_of(p)));
      EXPECT_TRUE(tier.enabled()) << "after refusing " << tier.path_of(hash_of(p));
    }
    EXPECT_FALSE(watchdog.fired()) << "a read blocked on the FIFO";
  }
  EXPECT_EQ(tier.stats().files_rejected, 5);
  EXPECT_EQ(tier.stats().hits, 0);
  EXPECT_EQ(tier.stats().bytes_read, 0) << "nothing was read from the refused entries";
  EXPECT_TRUE(w.seen.empty());
  EXPECT_FALSE(fs::exists(fs::symlink_status(tier.path_of(hash_of(planted.link_out)))));
  EXPECT_FALSE(fs::exists(tier.path_of(hash_of(planted.hard_link))));
  EXPECT_TRUE(fs::exists(outside.linked)) << "only our name of the hard link is removed";
  EXPECT_EQ(outside.now(), outside_before);
  std::vector<uint8_t> out(96);
  EXPECT_TRUE(tier.load(hash_of(good), good, out));
}

// /etc/passwd itself behind a block's name, before and after the scan.
TEST(DiskTierUntrusted, ALinkToEtcPasswdIsNeitherIndexedNorRead) {
  if (!fs::is_regular_file("/etc/passwd")) GTEST_SKIP() << "no /etc/passwd";
  const Snapshot before = snapshot("/etc/passwd");
  TempDir dir("kvforge-disk-untrusted");
  const auto p = prefix(4);
  {
    KvDiskTier writer(dir.path, 1 << 20, identity());
    fs::create_symlink("/etc/passwd", writer.path_of(hash_of(p)));
  }
  KvDiskTier tier(dir.path, 1 << 20, identity());
  EXPECT_FALSE(tier.contains(hash_of(p)));
  EXPECT_EQ(tier.stats().files, 0);
  // Swapped in after the scan.
  fs::remove(tier.path_of(hash_of(p)));
  ASSERT_TRUE(tier.store(hash_of(p), p, payload(1)));
  fs::remove(tier.path_of(hash_of(p)));
  fs::create_symlink("/etc/passwd", tier.path_of(hash_of(p)));
  std::vector<uint8_t> out(96);
  EXPECT_FALSE(tier.load(hash_of(p), p, out));
  EXPECT_EQ(tier.stats().bytes_read, 0);
  EXPECT_TRUE(tier.enabled());
  EXPECT_EQ(snapshot("/etc/passwd"), before);
}

// A store cannot replace a directory under its block's name: that block
// stays uncached and the tier stays on. A stale temporary of our pid that
// is a link is replaced, never written through.
TEST(DiskTierUntrusted, ADirectoryOrALinkWhereAStoreWritesCostsOnlyThatBlock) {
  TempDir dir("kvforge-disk-untrusted");
  const auto blocked = prefix(1), linked = prefix(2), other = prefix(3);
  const Outside outside(prefix(9), prefix(10));
  const Snapshot passwd_before = snapshot(outside.passwd);
  Warnings w;
  KvDiskTier tier(dir.path, 1 << 20, identity(), w.fn());
  fs::create_directory(tier.path_of(hash_of(blocked)));
  std::ofstream(tier.path_of(hash_of(blocked)) / "inside") << "x";
  char tmp[128];
  std::snprintf(tmp, sizeof tmp, ".tmp-%016llx-%016llx-%ld.kvb",
                (unsigned long long)identity().fingerprint(), (unsigned long long)hash_of(linked),
                long(::getpid()));
  fs::create_symlink(outside.passwd, dir.path / tmp);
  EXPECT_FALSE(tier.store(hash_of(blocked), blocked, payload(1)));
  EXPECT_TRUE(tier.enabled());
  EXPECT_TRUE(tier.store(hash_of(linked), linked, payload(2)));
  EXPECT_TRUE(tier.store(hash_of(other), other, payload(3)));
  EXPECT_TRUE(tier.enabled());
  EXPECT_TRUE(w.seen.empty());
  EXPECT_EQ(snapshot(outside.passwd), passwd_before);
  std::vector<uint8_t> out(96);
  EXPECT_TRUE(tier.load(hash_of(linked), linked, out));
  EXPECT_EQ(out, payload(2));
}

// Under a file-size limit below one block file, with SIGXFSZ at its default
// (which ends the process), in a child process: the store fails with EFBIG,
// the tier turns off with one warning naming the file, the process lives.
TEST(DiskTierUntrusted, AFileSizeLimitTurnsTheTierOffInsteadOfKillingTheProcess) {
  TempDir dir("kvforge-disk-untrusted");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_DFL);
    rlimit small{100, RLIM_INFINITY};
    if (::getrlimit(RLIMIT_FSIZE, &small) != 0) ::_exit(3);
    small.rlim_cur = 100;
    if (::setrlimit(RLIMIT_FSIZE, &small) != 0) ::_exit(3);
    Warnings w;
    KvDiskTier tier(dir.path, 1 << 20, identity(), w.fn());
    const bool stored = tier.store(hash_of(prefix(0)), prefix(0), payload(0));
    const bool ok = !stored && tier.stats().degraded && w.seen.size() == 1 &&
                    w.seen[0].find("File too large") != std::string::npos &&
                    w.seen[0].find(dir.path.string()) != std::string::npos;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "expected a failed store, degraded, one warning";
}

}  // namespace disk_tier_untrusted_test
}  // namespace kvforge
