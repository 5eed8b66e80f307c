// The MPI implementation of Communicator, declared without mpi.h so that
// only communicator_mpi.cpp includes it. Defined only in builds with MPI.
#pragma once

#include <memory>

#include "core/comm/communicator.h"

namespace kvforge {

// Initializes MPI (MPI_THREAD_FUNNELED: only the thread that calls the
// collectives talks to MPI; the thread pool's workers never do) with
// MPI_ERRORS_RETURN on MPI_COMM_WORLD, so failures become exceptions.
std::unique_ptr<Communicator> make_mpi_communicator(int* argc, char*** argv);

}  // namespace kvforge
