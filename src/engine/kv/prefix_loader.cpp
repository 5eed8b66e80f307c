#include "engine/kv/prefix_loader.h"

#include <algorithm>
#include <string>

namespace kvforge {

int32_t PrefixLoadResult::n_good() const {
  int32_t n = 0;
  while (size_t(n) < reads.size() && reads[size_t(n)].outcome == KvDiskTier::BlockRead::kHit) ++n;
  return n;
}

bool PrefixLoadResult::state_good() const {
  return !wants_state || (state && state->outcome == KvDiskTier::BlockRead::kHit);
}

PrefixLoader::PrefixLoader(const KvDiskTier& disk, KvReadMode mode,
                           std::chrono::milliseconds stall_timeout, ReadBlockFn read)
    : disk_(disk),
      stall_timeout_(stall_timeout),
      read_(read ? std::move(read)
                 : ReadBlockFn([&disk](uint64_t h, std::span<const int32_t> prefix,
                                       BlockFileReader& reader, std::span<const uint8_t>& payload) {
                     return disk.read_block(h, prefix, reader, payload);
                   })),
      reader_(mode),
      thread_([this] { run(); }) {}

PrefixLoader::~PrefixLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    detached_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void PrefixLoader::submit(PrefixLoadJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
}

int32_t PrefixLoader::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int32_t(queue_.size() + finished_.size()) + (running_ && !detached_ ? 1 : 0);
}

void PrefixLoader::detach_running(std::unique_lock<std::mutex>& lock) {
  detached_ = true;
  done_.wait(lock, [&] { return !copying_; });
}

void PrefixLoader::abandon_if_stalled(std::unique_lock<std::mutex>& lock) {
  // Only a job in flight can stall: a queued one behind an idle thread is
  // about to start (a thread slow to be scheduled is not a stuck read).
  if (!running_ || idle() || Clock::now() - progress_at_ < stall_timeout_) return;
  std::vector<PrefixLoadResult> abandoned;
  // The stuck read, reported once as an I/O error: it turns the tier off.
  KvDiskTier::BlockRead stuck;
  stuck.outcome = KvDiskTier::BlockRead::kIoError;
  stuck.error = "a read did not finish within " + std::to_string(stall_timeout_.count()) + " ms";
  if (current_.reads.size() < current_.hashes.size())
    stuck.error = "reading " + disk_.path_of(current_.hashes[current_.reads.size()]).string() +
                  " did not finish within " + std::to_string(stall_timeout_.count()) + " ms";
  const bool detach = !detached_;
  if (detach) abandoned.push_back(std::move(current_));
  // Queued jobs would wait behind the stuck read: recomputed instead.
  for (PrefixLoadJob& job : queue_)
    abandoned.push_back({job.seq, std::move(job.hashes), {}, job.eligible, false, std::nullopt});
  queue_.clear();
  if (detach) detach_running(lock);
  if (!abandoned.empty()) abandoned.front().reads.push_back(std::move(stuck));
  for (PrefixLoadResult& r : abandoned) finished_.push_back(std::move(r));
}

std::vector<PrefixLoadResult> PrefixLoader::take(bool wait) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    abandon_if_stalled(lock);
    if (!wait || !finished_.empty() || idle()) break;
    if (running_)
      done_.wait_until(lock, progress_at_ + stall_timeout_);
    else
      done_.wait(lock);  // the thread notifies when it starts the queued job
  }
  std::vector<PrefixLoadResult> out;
  out.swap(finished_);
  return out;
}

void PrefixLoader::cancel(SeqId seq) {
  std::unique_lock<std::mutex> lock(mu_);
  std::erase_if(queue_, [seq](const PrefixLoadJob& j) { return j.seq == seq; });
  std::erase_if(finished_, [seq](const PrefixLoadResult& r) { return r.seq == seq; });
  if (running_ == seq && !detached_) detach_running(lock);
}

// Runs with `lock` held except around each read and each copy; stops at the
// first block that is not a hit, or when the job is detached.
void PrefixLoader::load(const PrefixLoadJob& job, std::unique_lock<std::mutex>& lock) {
  const size_t bs = job.tokens.size() / (size_t(job.from_block) + job.hashes.size());
  const std::span<const int32_t> tokens(job.tokens);
  for (size_t i = 0; i < job.hashes.size() && !detached_; ++i) {
    std::span<const uint8_t> payload;
    const std::span<const int32_t> prefix = tokens.first((size_t(job.from_block) + i + 1) * bs);
    lock.unlock();
    KvDiskTier::BlockRead read = read_(job.hashes[i], prefix, reader_, payload);
    lock.lock();
    if (detached_) return;
    progress_at_ = Clock::now();
    const bool hit = read.outcome == KvDiskTier::BlockRead::kHit;
    current_.reads.push_back(std::move(read));
    if (!hit) return;
    copying_ = true;
    lock.unlock();
    job.import(i, payload);
    lock.lock();
    copying_ = false;
    done_.notify_all();  // a detach_running() may wait for the copy
  }
  if (job.import_state && !detached_) load_state(job, lock);
}

// load()'s last read: the snapshot after the job's whole prefix.
void PrefixLoader::load_state(const PrefixLoadJob& job, std::unique_lock<std::mutex>& lock) {
  std::span<const uint8_t> payload;
  lock.unlock();
  KvDiskTier::BlockRead read = disk_.read_state(job.hashes.back(), job.tokens, reader_, payload);
  lock.lock();
  if (detached_) return;
  progress_at_ = Clock::now();
  const bool hit = read.outcome == KvDiskTier::BlockRead::kHit;
  current_.state = std::move(read);
  if (!hit) return;
  copying_ = true;
  lock.unlock();
  job.import_state(payload);
  lock.lock();
  copying_ = false;
  done_.notify_all();
}

void PrefixLoader::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    PrefixLoadJob job = std::move(queue_.front());
    queue_.pop_front();
    running_ = job.seq;
    detached_ = false;
    progress_at_ = Clock::now();
    current_ = {job.seq, job.hashes, {}, job.eligible, bool(job.import_state), std::nullopt};
    done_.notify_all();  // a take(wait) now waits with the stall deadline
    load(job, lock);
    if (!detached_) finished_.push_back(std::move(current_));
    running_.reset();
    detached_ = stop_;
    done_.notify_all();
  }
}

}  // namespace kvforge
