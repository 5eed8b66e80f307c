// The response store on disk (serve --kv-disk DIR): DIR/responses-<model
// fingerprint>.json, so that stored responses, and the conversations
// previous_response_id continues, survive a restart as the KV blocks of the
// disk tier do. Written when the server stops, atomically (a temporary file
// renamed over the old one); read when it starts.
//
// Format: one JSON object {"kvforge_response_store": 1, "model": "<fingerprint>",
// "responses": [{"id", "object", "instructions", "messages", "prompt_text",
// "prompt_ids", "output_ids", "output_text"}, ...]}, least recently used
// first. A file of another model is not this file (the name differs). A file
// that cannot be read, or holds anything else, is an error naming the file
// and what is wrong: the server refuses to start rather than overwrite
// conversations it could not read.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

#include "app/server/response_store.h"

namespace kvforge::server {

class ResponseStoreFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The file of a model's store in a directory.
std::filesystem::path response_store_path(const std::filesystem::path& dir,
                                          const std::string& fingerprint);

// Puts the file's responses into `store` (which bounds them as always). A
// missing file is an empty store. Throws ResponseStoreFileError.
void load_response_store(const std::filesystem::path& file, const std::string& fingerprint,
                         ResponseStore& store);

// Writes every response of `store`. Throws ResponseStoreFileError.
void save_response_store(const std::filesystem::path& file, const std::string& fingerprint,
                         const ResponseStore& store);

}  // namespace kvforge::server
