// llama-server's slot actions, POST /slots/{id}?action=save|restore|erase
// (body {"filename"} for save and restore, a bare name under llama-server's
// --slot-save-path), mapped onto what kvforge keeps:
//   erase: an idle slot holds no KV in kvforge (a finished request's full
//     blocks join the shared prefix cache, which no slot owns), so it answers
//     llama-server's {"id_slot", "n_erased": 0}; a slot that is processing a
//     request is a 409 naming it (llama-server waits for it instead).
//   save, restore: refused with 501 (not_supported_error) saying why: there is
//     no per-slot KV to write or to load into. The paged engine reuses any
//     earlier prompt's blocks for a request with the same prefix by itself,
//     and --kv-disk keeps them on disk across restarts; static slots are
//     cleared for each request.
// The id (0 .. entries of GET /slots - 1), the action and the filename are
// checked first, as llama-server does: 400 "Invalid slot ID", "Invalid
// action", "Invalid filename".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/server/engine_loop.h"

namespace kvforge::server {

// Throws ApiError for every refusal.
nlohmann::json slot_action_response(const std::vector<EngineLoop::RunningRequest>& running,
                                    int total_slots, const std::string& id,
                                    const std::string& action, const std::string& body);

}  // namespace kvforge::server
