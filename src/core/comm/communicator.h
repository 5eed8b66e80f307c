// How the ranks of a tensor-parallel run exchange data. The one place that
// knows about MPI is communicator_mpi.cpp (built only when CMake finds MPI);
// everything else sees this interface. A run on one process uses
// SingleProcessCommunicator, whose collectives have nothing to exchange.
//
// Every collective is called by all ranks in the same order with the same
// sizes; buffers hold every rank's block, this rank's filled in before the
// call and every other rank's filled in by it (in place, blocks in rank
// order). Failures (a peer that died, a broken link, a peer silent past the
// deadline) throw CommunicationError naming the operation and the rank, so
// a rank never waits silently for one that is gone or hung.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

namespace kvforge {

// What this rank's collectives have cost since the run began. One message
// is one collective call; bytes count the payload as if every rank sent its
// block to every other one (MPI may route it differently, a ring or a tree,
// but moves at least this much); seconds are the wall time inside the calls,
// waiting for slower ranks included.
struct CommStats {
  int64_t messages = 0;
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  double seconds = 0;
};

// A collective that failed: a peer died, a link broke, or a peer did not
// answer within the deadline. The run cannot go on; the message names the rank.
class CommunicationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // buf: [size()][count] floats; block rank() is this rank's.
  virtual void all_gather(float* buf, size_t count) = 0;
  // buf: the blocks of counts[0], counts[1], ... floats back to back
  // (counts.size() == size()); block rank() is this rank's.
  virtual void all_gather_v(float* buf, std::span<const int64_t> counts) = 0;
  // buf: [size()] values; value rank() is this rank's.
  virtual void all_gather(uint64_t* buf) = 0;
  // Copies `bytes` bytes of buf on rank `root` into buf on every rank.
  virtual void broadcast(void* buf, size_t bytes, int root) = 0;
  // Ends every rank of the run at once with `code` (after an error on this
  // rank, so that the others do not wait for it).
  [[noreturn]] virtual void abort(int code) = 0;
  virtual CommStats stats() const { return {}; }
  // From now on a collective that waits longer than `seconds` for a peer
  // throws CommunicationError naming it (0 = wait forever, the default:
  // ranks may take very different times to load a model).
  virtual void set_deadline(double seconds) {}
  virtual double deadline() const { return 0; }
};

class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_gather(float*, size_t) override {}
  void all_gather_v(float*, std::span<const int64_t>) override {}
  void all_gather(uint64_t*) override {}
  void broadcast(void*, size_t, int) override {}
  [[noreturn]] void abort(int code) override;
};

// Whether this executable was built with MPI.
bool mpi_available();

// The communicator of this process's run: an MPI one when built with MPI and
// started by an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE / PMIX_RANK),
// else a SingleProcessCommunicator. Initializes MPI; destroying the returned
// object finalizes it. Call once, from main.
std::unique_ptr<Communicator> make_world_communicator(int* argc, char*** argv);

}  // namespace kvforge
