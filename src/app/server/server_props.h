// What the server says of the file it serves: llama-server's GET /props and
// Ollama's /api/tags, /api/ps and /api/show read it.
#pragma once

#include <cstdint>
#include <string>

namespace kvforge::server {

struct ServerProps {
  std::string model_path;
  int total_slots = 1;       // requests generated at once (--max-seqs, or the static slots)
  std::string architecture;  // general.architecture
  uint64_t parameter_count = 0;
  std::string file_type;  // general.file_type's name ("Q8_0"); empty when unknown
};

}  // namespace kvforge::server
