#include "core/comm/communicator.h"

#include <cstdlib>

#include "core/comm/communicator_mpi.h"

namespace kvforge {

void SingleProcessCommunicator::abort(int code) { std::_Exit(code); }

bool mpi_available() {
#ifdef KVFORGE_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Communicator> make_world_communicator(int* argc, char*** argv) {
#ifdef KVFORGE_HAVE_MPI
  // Without a launcher MPI_Init would start a singleton run, which takes
  // time and may warn; a single process needs none of it.
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK"))
    return make_mpi_communicator(argc, argv);
#endif
  return std::make_unique<SingleProcessCommunicator>();
}

}  // namespace kvforge
