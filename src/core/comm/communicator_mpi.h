// The MPI implementation of Communicator, declared without mpi.h so that
// only communicator_mpi.cpp includes it. Defined only in builds with MPI.
#pragma once

#include <memory>

#include "core/comm/communicator.h"

namespace kvforge {

// Initializes MPI (MPI_THREAD_SERIALIZED: one thread at a time talks to
// MPI, which need not be main's: the server steps its engine on its own
// thread; the thread pool's workers never do) with
// MPI_ERRORS_RETURN on MPI_COMM_WORLD, so failures become exceptions.
std::unique_ptr<Communicator> make_mpi_communicator(int* argc, char*** argv);

}  // namespace kvforge
