#include "core/comm/communicator_mpi.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvforge {
namespace {

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
    counts_.resize(size_t(size_));
    displs_.resize(size_t(size_));
  }
  ~MpiCommunicator() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_gather(float* buf, size_t count) override {
    const Meter m(*this, count * sizeof(float), count * sizeof(float) * size_t(size_ - 1));
    check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, as_int(count), MPI_FLOAT,
                        MPI_COMM_WORLD),
          "MPI_Allgather");
  }

  void all_gather_v(float* buf, std::span<const int64_t> counts) override {
    if (counts.size() != size_t(size_))
      throw std::invalid_argument("all_gather_v: " + std::to_string(counts.size()) +
                                  " counts for " + std::to_string(size_) + " ranks");
    int64_t at = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      counts_[r] = as_int(size_t(counts[r]));
      displs_[r] = as_int(size_t(at));
      at += counts[r];
    }
    const size_t own = size_t(counts[size_t(rank_)]) * sizeof(float);
    const Meter m(*this, own, size_t(at) * sizeof(float) - own);
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts_.data(), displs_.data(),
                         MPI_FLOAT, MPI_COMM_WORLD),
          "MPI_Allgatherv");
  }

  void all_gather(uint64_t* buf) override {
    const Meter m(*this, sizeof(uint64_t), sizeof(uint64_t) * size_t(size_ - 1));
    check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, 1, MPI_UINT64_T, MPI_COMM_WORLD),
          "MPI_Allgather");
  }

  void broadcast(void* buf, size_t bytes, int root) override {
    const Meter m(*this, rank_ == root ? bytes : 0, rank_ == root ? 0 : bytes);
    check(MPI_Bcast(buf, as_int(bytes), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
  }

  CommStats stats() const override { return stats_; }

 private:
  static int as_int(size_t n) {
    if (n > size_t(INT_MAX))
      throw std::length_error("MPI message of " + std::to_string(n) + " elements exceeds INT_MAX");
    return int(n);
  }

  void check(int err, const char* what) const {
    if (err == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, text, &len);
    throw std::runtime_error("rank " + std::to_string(rank_) + ": " + what + " failed: " +
                             std::string(text, size_t(len)) + " (another rank probably died)");
  }

  // Counts one collective into stats_: its bytes at once, its time when it ends.
  class Meter {
   public:
    // sent: this rank's block once (it goes to each peer); received: the others' blocks.
    Meter(MpiCommunicator& c, size_t sent, size_t received)
        : c_(c), start_(std::chrono::steady_clock::now()) {
      ++c_.stats_.messages;
      c_.stats_.bytes_sent += int64_t(sent) * (c_.size_ - 1);
      c_.stats_.bytes_received += int64_t(received);
    }
    ~Meter() {
      c_.stats_.seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

   private:
    MpiCommunicator& c_;
    std::chrono::steady_clock::time_point start_;
  };

  int rank_ = 0;
  int size_ = 1;
  CommStats stats_;
  std::vector<int> counts_, displs_;  // [size] of the last all_gather_v
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(int* argc, char*** argv) {
  return std::make_unique<MpiCommunicator>(argc, argv);
}

}  // namespace kvforge
