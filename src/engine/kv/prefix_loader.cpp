#include "engine/kv/prefix_loader.h"

#include <algorithm>

namespace kvforge {

int32_t PrefixLoadResult::n_good() const {
  int32_t n = 0;
  while (size_t(n) < reads.size() && reads[size_t(n)].outcome == KvDiskTier::BlockRead::kHit) ++n;
  return n;
}

PrefixLoader::PrefixLoader(const KvDiskTier& disk, PagedKvCache& cache, KvReadMode mode)
    : disk_(disk), cache_(cache), reader_(mode), thread_([this] { run(); }) {}

PrefixLoader::~PrefixLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cancel_running_ = true;
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
  return int32_t(queue_.size() + finished_.size()) + (running_ ? 1 : 0);
}

std::vector<PrefixLoadResult> PrefixLoader::take(bool wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (wait) done_.wait(lock, [&] { return !finished_.empty() || (queue_.empty() && !running_); });
  std::vector<PrefixLoadResult> out;
  out.swap(finished_);
  return out;
}

void PrefixLoader::cancel(SeqId seq) {
  std::unique_lock<std::mutex> lock(mu_);
  std::erase_if(queue_, [seq](const PrefixLoadJob& j) { return j.seq == seq; });
  std::erase_if(finished_, [seq](const PrefixLoadResult& r) { return r.seq == seq; });
  if (running_ != seq) return;
  cancel_running_ = true;
  done_.wait(lock, [&] { return running_ != seq; });
}

PrefixLoadResult PrefixLoader::load(const PrefixLoadJob& job) {
  PrefixLoadResult r{job.seq, job.hashes, {}, job.eligible};
  const size_t bs = job.tokens.size() / (size_t(job.from_block) + job.hashes.size());
  const std::span<const int32_t> tokens(job.tokens);
  for (size_t i = 0; i < job.hashes.size() && !cancel_running_; ++i) {
    std::span<const uint8_t> payload;
    const std::span<const int32_t> prefix = tokens.first((size_t(job.from_block) + i + 1) * bs);
    r.reads.push_back(disk_.read_block(job.hashes[i], prefix, reader_, payload));
    if (r.reads.back().outcome != KvDiskTier::BlockRead::kHit) break;
    cache_.import_block(job.dst[i], payload);
  }
  return r;
}

void PrefixLoader::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    PrefixLoadJob job = std::move(queue_.front());
    queue_.pop_front();
    running_ = job.seq;
    cancel_running_ = false;
    lock.unlock();
    PrefixLoadResult r = load(job);
    lock.lock();
    if (!cancel_running_) finished_.push_back(std::move(r));
    running_.reset();
    done_.notify_all();
  }
}

}  // namespace kvforge
