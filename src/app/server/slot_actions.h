// llama-server's slot actions, POST /slots/{id}?action=save|restore|erase
// (body {"filename"} for save and restore, a bare name under
// --slot-save-path):
//   erase: an idle slot holds no KV of its own in kvforge (a finished
//     request's full blocks join the shared prefix cache, which no slot
//     owns), so it answers llama-server's {"id_slot", "n_erased": 0}; a slot
//     that is processing a request is a 409 naming it (llama-server waits).
//   save, restore: with --slot-save-path, slot_files.h; without it, 501
//     (not_supported_error) naming the flag.
// The id (0 .. entries of GET /slots - 1), the action and the filename are
// checked first, as llama-server does: 400 "Invalid slot ID", "Invalid
// action", "Invalid filename".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/server/engine_loop.h"
#include "app/server/slot_files.h"

namespace kvforge::server {

// Throws ApiError for every refusal. `files`: null without --slot-save-path.
nlohmann::json slot_action_response(EngineLoop& loop, const SlotFiles* files, int total_slots,
                                    const std::string& id, const std::string& action,
                                    const std::string& body);

}  // namespace kvforge::server
