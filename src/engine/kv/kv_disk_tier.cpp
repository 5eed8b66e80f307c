#include "engine/kv/kv_disk_tier.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "engine/kv/kv_checksum.h"

namespace kvforge {
namespace {

namespace fs = std::filesystem;

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

// Parses exactly 16 lowercase hex digits.
bool parse_hex16(std::string_view s, uint64_t& out) {
  if (s.size() != 16) return false;
  uint64_t v = 0;
  for (const char c : s) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | uint64_t(d);
  }
  out = v;
  return true;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// ".tmp-<fp>-<hash>-<pid>.kvb" whose writer is gone: left by a killed process.
bool is_orphan_tmp(const std::string& name, const std::string& prefix) {
  const std::string head = ".tmp-" + prefix;
  if (name.rfind(head, 0) != 0 || name.size() < head.size() + 16 + 2) return false;
  const size_t dash = head.size() + 16;
  if (name[dash] != '-') return false;
  const long pid = std::strtol(name.c_str() + dash + 1, nullptr, 10);
  return pid > 0 && pid != long(getpid()) && kill(pid_t(pid), 0) != 0 && errno == ESRCH;
}

// A file-size limit (ulimit -f) must fail a block write with EFBIG, which
// turns the tier off as a full disk does, rather than end the process with
// SIGXFSZ. The disposition is the process's: left alone when someone
// handles the signal already.
void ignore_file_size_signal() {
  struct sigaction old {};
  if (::sigaction(SIGXFSZ, nullptr, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
      old.sa_handler == SIG_DFL)
    ::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace

KvDiskTier::KvDiskTier(fs::path dir, uint64_t capacity_bytes, KvBlockIdentity id, WarnFn warn)
    : dir_(std::move(dir)),
      capacity_(capacity_bytes),
      id_(id),
      state_id_(id.for_state()),
      fingerprint_(id.fingerprint()),
      prefix_(hex16(fingerprint_) + "-"),
      warn_(std::move(warn)) {
  if (!warn_) warn_ = [](const std::string& m) { std::cerr << "kvforge: warning: " << m << "\n"; };
  stats_.enabled = true;
  ignore_file_size_signal();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_, ec)) {
    degrade("cannot create directory " + dir_.string() + (ec ? ": " + ec.message() : ""));
    return;
  }
  scan();
}

fs::path KvDiskTier::path_of(uint64_t key) const { return dir_ / (prefix_ + hex16(key) + ".kvb"); }

uint64_t KvDiskTier::state_key(uint64_t chain_hash) {
  const uint64_t fields[] = {chain_hash, 0x5354415445ull};  // "STATE"
  return xxh64(fields, sizeof fields);
}

bool KvDiskTier::contains_state(uint64_t chain_hash) const {
  return id_.state_bytes > 0 && contains(state_key(chain_hash));
}

void KvDiskTier::degrade(const std::string& what) {
  ++stats_.io_errors;
  if (stats_.degraded) return;
  stats_.degraded = true;
  warn_("KV disk tier " + dir_.string() + ": " + what + "; serving from RAM only from now on");
}

void KvDiskTier::scan() {
  struct Found {
    uint64_t hash, bytes;
    timespec mtime;
  };
  std::vector<Found> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // One lstat per entry, its own errors: a link (symbolic or hard), a FIFO
    // or a directory named like ours is skipped (never followed, opened or
    // indexed), and an entry that fails costs only itself.
    struct stat st {};
    const bool regular =
        ::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1;
    if (!regular) continue;
    if (is_orphan_tmp(name, prefix_)) {
      ::unlink(it->path().c_str());
      continue;
    }
    uint64_t hash;
    if (name.size() != prefix_.size() + 16 + 4 || name.rfind(prefix_, 0) != 0 ||
        name.compare(name.size() - 4, 4, ".kvb") != 0 ||
        !parse_hex16(std::string_view(name).substr(prefix_.size(), 16), hash))
      continue;
    found.push_back({hash, uint64_t(st.st_size), st.st_mtim});
  }
  if (ec) {
    degrade("cannot list " + dir_.string() + ": " + ec.message());
    return;
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec
                                            : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  for (const Found& f : found) index(f.hash, f.bytes);
  make_room(0);
}

void KvDiskTier::index(uint64_t chain_hash, uint64_t bytes) {
  lru_.push_back(chain_hash);
  index_[chain_hash] = {bytes, std::prev(lru_.end())};
  ++stats_.files;
  stats_.bytes_on_disk += int64_t(bytes);
}

void KvDiskTier::forget(uint64_t chain_hash, bool unlink_file) {
  const auto it = index_.find(chain_hash);
  if (it == index_.end()) return;
  lru_.erase(it->second.lru);
  --stats_.files;
  stats_.bytes_on_disk -= int64_t(it->second.bytes);
  index_.erase(it);
  if (unlink_file) ::unlink(path_of(chain_hash).c_str());
}

void KvDiskTier::touch(uint64_t chain_hash) {
  const auto it = index_.find(chain_hash);
  if (it == index_.end()) return;
  lru_.splice(lru_.end(), lru_, it->second.lru);
  // Persist the recency for the next process; a failure here costs nothing.
  // Never through a link: an entry swapped for one since the read changes
  // only the link's own time.
  ::utimensat(AT_FDCWD, path_of(chain_hash).c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

bool KvDiskTier::make_room(uint64_t bytes) {
  if (bytes > capacity_) return false;
  while (!lru_.empty() && uint64_t(stats_.bytes_on_disk) + bytes > capacity_) {
    forget(lru_.front(), true);
    ++stats_.files_evicted;
  }
  return true;
}

bool KvDiskTier::contains(uint64_t chain_hash) const {
  return enabled() && index_.count(chain_hash) != 0;
}

bool KvDiskTier::write_file(const fs::path& tmp, std::span<const uint8_t> bytes) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
  int fd = ::open(tmp.c_str(), flags, 0644);
  if (fd < 0 && errno == EEXIST) {
    // Our pid's name, so no live writer's: left by a killed process that had
    // our pid, or planted. Unlinking removes a link itself, not its target.
    ::unlink(tmp.c_str());
    fd = ::open(tmp.c_str(), flags, 0644);
  }
  if (fd < 0) {
    degrade("cannot create " + tmp.string() + ": " + std::strerror(errno));
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      ::unlink(tmp.c_str());
      degrade("cannot write " + tmp.string() + ": " + std::strerror(err));
      return false;
    }
    done += size_t(n);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    degrade("cannot write " + tmp.string() + ": " + std::strerror(err));
    return false;
  }
  return true;
}

bool KvDiskTier::store(uint64_t chain_hash, std::span<const int32_t> prefix_tokens,
                       std::span<const uint8_t> payload) {
  if (!enabled()) return false;
  if (index_.count(chain_hash)) return true;
  if (!store_file(chain_hash, id_, chain_hash, prefix_tokens, payload)) return false;
  ++stats_.blocks_stored;
  return true;
}

bool KvDiskTier::store_state(uint64_t chain_hash, std::span<const int32_t> prefix_tokens,
                             std::span<const uint8_t> payload) {
  if (id_.state_bytes == 0 || payload.size() != id_.state_bytes)
    throw std::invalid_argument("KV disk tier: a snapshot of " + std::to_string(payload.size()) +
                                " bytes, the tier's identity says " +
                                std::to_string(id_.state_bytes));
  if (!enabled()) return false;
  if (index_.count(state_key(chain_hash))) return true;
  if (!store_file(state_key(chain_hash), state_id_, chain_hash, prefix_tokens, payload))
    return false;
  ++stats_.states_stored;
  return true;
}

// A file not indexed yet, on an enabled tier: `key` names it, `chain_hash`
// (the prefix's last block's) goes in its header.
bool KvDiskTier::store_file(uint64_t key, const KvBlockIdentity& id, uint64_t chain_hash,
                            std::span<const int32_t> prefix_tokens,
                            std::span<const uint8_t> payload) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<uint8_t> file = encode_block_file(id, chain_hash, prefix_tokens, payload);
  if (!make_room(file.size())) return false;  // one block larger than the whole tier
  const fs::path final_path = path_of(key);
  const fs::path tmp =
      dir_ / (".tmp-" + prefix_ + hex16(key) + "-" + std::to_string(long(getpid())) + ".kvb");
  if (!write_file(tmp, file)) return false;
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    // A directory under the block's name costs that block only; rename
    // replaces a link or a FIFO there without following it.
    if (err != EISDIR && err != ENOTEMPTY && err != EEXIST)
      degrade("cannot rename into " + final_path.string() + ": " + std::strerror(err));
    return false;
  }
  index(key, file.size());
  stats_.bytes_written += int64_t(file.size());
  stats_.store_seconds += seconds_since(start);
  return true;
}

KvDiskTier::BlockRead KvDiskTier::read_block(uint64_t chain_hash,
                                             std::span<const int32_t> prefix_tokens,
                                             BlockFileReader& reader,
                                             std::span<const uint8_t>& payload) const {
  return read_file(chain_hash, id_, chain_hash, prefix_tokens, reader, payload);
}

KvDiskTier::BlockRead KvDiskTier::read_state(uint64_t chain_hash,
                                             std::span<const int32_t> prefix_tokens,
                                             BlockFileReader& reader,
                                             std::span<const uint8_t>& payload) const {
  return read_file(state_key(chain_hash), state_id_, chain_hash, prefix_tokens, reader, payload);
}

KvDiskTier::BlockRead KvDiskTier::read_file(uint64_t key, const KvBlockIdentity& id,
                                            uint64_t chain_hash,
                                            std::span<const int32_t> prefix_tokens,
                                            BlockFileReader& reader,
                                            std::span<const uint8_t>& payload) const {
  const auto start = std::chrono::steady_clock::now();
  BlockRead r;
  const fs::path path = path_of(key);
  const FileRead f = reader.read(path, block_file_bytes(id, prefix_tokens.size()));
  if (f.status == FileRead::kMissing) return r;  // evicted by another process: a miss
  if (f.status == FileRead::kRefused) {          // not a regular file of this block's size
    r.outcome = BlockRead::kRejected;
    r.seconds = seconds_since(start);
    return r;
  }
  if (f.status == FileRead::kError) {
    r.outcome = BlockRead::kIoError;
    r.error = "cannot read " + path.string() + ": " + std::strerror(f.error);
    return r;
  }
  r.bytes = int64_t(f.bytes.size());
  const BlockFileCheck check = decode_block_file(f.bytes, id, chain_hash, prefix_tokens, payload);
  r.outcome = check == BlockFileCheck::kOk && payload.size() == id.payload_bytes
                  ? BlockRead::kHit
                  : BlockRead::kRejected;
  r.seconds = seconds_since(start);
  return r;
}

bool KvDiskTier::note_read(uint64_t chain_hash, const BlockRead& r) {
  if (!note_file_read(chain_hash, r)) return false;
  ++stats_.hits;
  stats_.tokens_restored += id_.block_size;
  return true;
}

bool KvDiskTier::note_state_read(uint64_t chain_hash, const BlockRead& r) {
  if (!note_file_read(state_key(chain_hash), r)) return false;
  ++stats_.state_hits;
  return true;
}

bool KvDiskTier::note_file_read(uint64_t key, const BlockRead& r) {
  stats_.bytes_read += r.bytes;
  switch (r.outcome) {
    case BlockRead::kMissing:
      forget(key, false);
      return false;
    case BlockRead::kIoError:
      degrade(r.error);
      return false;
    case BlockRead::kRejected:
      ++stats_.files_rejected;
      forget(key, true);
      return false;
    case BlockRead::kHit:
      break;
  }
  touch(key);
  stats_.load_seconds += r.seconds;
  return true;
}

bool KvDiskTier::load(uint64_t chain_hash, std::span<const int32_t> prefix_tokens,
                      std::span<uint8_t> out) {
  if (!contains(chain_hash)) return false;
  std::span<const uint8_t> payload;
  BlockRead r = read_block(chain_hash, prefix_tokens, reader_, payload);
  if (r.outcome == BlockRead::kHit && payload.size() != out.size())
    r.outcome = BlockRead::kRejected;
  if (r.outcome == BlockRead::kHit) std::memcpy(out.data(), payload.data(), payload.size());
  return note_read(chain_hash, r);
}

}  // namespace kvforge
