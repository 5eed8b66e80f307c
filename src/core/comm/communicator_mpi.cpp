#include "core/comm/communicator_mpi.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace kvforge {
namespace {

using Clock = std::chrono::steady_clock;

// Collectives as point-to-point messages between every pair of ranks, each
// rank waiting with a deadline: a peer that hangs (or is stopped) is named
// by the message that never came, which MPI's own collectives cannot say.
// Messages between two ranks on one communicator arrive in the order sent,
// so successive collectives never mix.
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(int* argc, char*** argv) {
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED)
      throw std::runtime_error("MPI_Init_thread: this MPI provides thread level " +
                               std::to_string(provided) + ", below MPI_THREAD_SERIALIZED");
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    requests_.reserve(2 * size_t(size_));
  }
  // After a failed exchange MPI_Finalize would wait for the missing peer;
  // the caller ends the run with abort() instead.
  ~MpiCommunicator() override {
    if (!failed_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void set_deadline(double seconds) override { deadline_ = seconds; }
  double deadline() const override { return deadline_; }

  void all_gather(float* buf, size_t count) override {
    const Meter m(*this, count * sizeof(float), count * sizeof(float) * size_t(size_ - 1));
    for (int p = 0; p < size_; ++p)
      if (p != rank_)
        exchange(buf + size_t(rank_) * count, buf + size_t(p) * count, count, MPI_FLOAT, p);
    wait("all-gather");
  }

  void all_gather_v(float* buf, std::span<const int64_t> counts) override {
    if (counts.size() != size_t(size_))
      throw std::invalid_argument("all_gather_v: " + std::to_string(counts.size()) +
                                  " counts for " + std::to_string(size_) + " ranks");
    std::vector<size_t> first(counts.size() + 1, 0);
    for (size_t r = 0; r < counts.size(); ++r) first[r + 1] = first[r] + size_t(counts[r]);
    const size_t own = size_t(counts[size_t(rank_)]);
    const Meter m(*this, own * sizeof(float), (first.back() - own) * sizeof(float));
    for (int p = 0; p < size_; ++p)
      if (p != rank_) {
        post_send(buf + first[size_t(rank_)], own, MPI_FLOAT, p);
        post_recv(buf + first[size_t(p)], size_t(counts[size_t(p)]), MPI_FLOAT, p);
      }
    wait("all-gather-v");
  }

  void all_gather(uint64_t* buf) override {
    const Meter m(*this, sizeof(uint64_t), sizeof(uint64_t) * size_t(size_ - 1));
    for (int p = 0; p < size_; ++p)
      if (p != rank_) exchange(buf + rank_, buf + p, 1, MPI_UINT64_T, p);
    wait("all-gather");
  }

  void broadcast(void* buf, size_t bytes, int root) override {
    const Meter m(*this, rank_ == root ? bytes : 0, rank_ == root ? 0 : bytes);
    if (rank_ == root) {
      for (int p = 0; p < size_; ++p)
        if (p != root) post_send(buf, bytes, MPI_BYTE, p);
    } else {
      post_recv(buf, bytes, MPI_BYTE, root);
    }
    wait("broadcast");
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
  }

  CommStats stats() const override { return stats_; }

 private:
  static constexpr int kTag = 27;

  void post_send(const void* p, size_t n, MPI_Datatype type, int peer) {
    requests_.push_back(MPI_REQUEST_NULL);
    peers_.push_back(-1 - peer);  // a send: a large one waits for its receiver
    check(MPI_Isend(p, as_int(n), type, peer, kTag, MPI_COMM_WORLD, &requests_.back()),
          "MPI_Isend");
  }
  void post_recv(void* p, size_t n, MPI_Datatype type, int peer) {
    requests_.push_back(MPI_REQUEST_NULL);
    peers_.push_back(peer);
    check(MPI_Irecv(p, as_int(n), type, peer, kTag, MPI_COMM_WORLD, &requests_.back()),
          "MPI_Irecv");
  }
  void exchange(const void* mine, void* theirs, size_t n, MPI_Datatype type, int peer) {
    post_send(mine, n, type, peer);
    post_recv(theirs, n, type, peer);
  }

  void wait(const char* what);
  [[noreturn]] void fail_late(const char* what, double waited);

  static int as_int(size_t n) {
    if (n > size_t(INT_MAX))
      throw std::length_error("MPI message of " + std::to_string(n) + " elements exceeds INT_MAX");
    return int(n);
  }

  void check(int err, const char* what) {
    if (err == MPI_SUCCESS) return;
    failed_ = true;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, text, &len);
    throw CommunicationError("rank " + std::to_string(rank_) + ": " + what + " failed: " +
                             std::string(text, size_t(len)) + " (another rank probably died)");
  }

  // Counts one collective into stats_: its bytes at once, its time when it ends.
  class Meter {
   public:
    // sent: this rank's block once (it goes to each peer); received: the others' blocks.
    Meter(MpiCommunicator& c, size_t sent, size_t received) : c_(c), start_(Clock::now()) {
      ++c_.stats_.messages;
      c_.stats_.bytes_sent += int64_t(sent) * (c_.size_ - 1);
      c_.stats_.bytes_received += int64_t(received);
    }
    ~Meter() { c_.stats_.seconds += std::chrono::duration<double>(Clock::now() - start_).count(); }

   private:
    MpiCommunicator& c_;
    Clock::time_point start_;
  };

  int rank_ = 0;
  int size_ = 1;
  double deadline_ = 0;  // seconds; 0 = wait forever
  bool failed_ = false;
  CommStats stats_;
  std::vector<MPI_Request> requests_;  // of the collective in flight
  std::vector<int> peers_;             // [request] receive: its sender; send: -1 - its receiver
};

// Polls the requests, yielding the core between polls (to the other rank,
// when both share cores, or to anything else) for the first 20 ms: a step's
// wait for a slower rank usually ends within that, and a sleep's wake-up
// latency there slows every decode step (docs/bench/bench-tp.md). Past 20 ms (a
// follower waiting for the next request) it polls every 50 us, leaving the
// core alone. Past the deadline, names the ranks it is still waiting for.
void MpiCommunicator::wait(const char* what) {
  const Clock::time_point start = Clock::now();
  for (int polls = 1;; ++polls) {
    int done = 0;
    check(MPI_Testall(int(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE),
          "MPI_Testall");
    if (done) break;
    if (polls % 64 != 0) continue;
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (deadline_ > 0 && waited > deadline_) fail_late(what, waited);
    // Yield while a step's skew between ranks is plausible; sleep past it.
    if (waited < 20e-3)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  requests_.clear();
  peers_.clear();
}

void MpiCommunicator::fail_late(const char* what, double waited) {
  failed_ = true;
  // The ranks whose message never came; else those that never took this
  // rank's (a message too large to send before its receiver asks for it).
  std::string silent, deaf;
  for (size_t i = 0; i < requests_.size(); ++i) {
    int done = 0;
    if (MPI_Test(&requests_[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) continue;
    std::string& list = peers_[i] >= 0 ? silent : deaf;
    const int peer = peers_[i] >= 0 ? peers_[i] : -1 - peers_[i];
    list += (list.empty() ? "" : ", ") + std::to_string(peer);
  }
  const std::string late = !silent.empty() ? silent : !deaf.empty() ? deaf : "(unknown)";
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f", waited);
  throw CommunicationError("rank " + late + " did not answer rank " + std::to_string(rank_) +
                           "'s " + what + " within " + secs +
                           " s (hung, stopped or starved of CPU); ending the run");
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(int* argc, char*** argv) {
  return std::make_unique<MpiCommunicator>(argc, argv);
}

}  // namespace kvforge
