// What rank 0 tells the other ranks of a tensor-parallel run before each
// engine step: the requests it added, aborted or stopped since the last
// message, and whether to step, only take note (a heartbeat while idle) or
// end. Every rank applies the same commands to the same engine in the same
// order, so their schedulers make the same decisions (lockstep_backend.h).
//
// Wire format (little-endian, as the ranks of one build share it): a header
// broadcast of kStepHeaderBytes {u32 kind, u32 n_commands, u64 payload
// bytes, u32 prompt, u32 zero} (prompt: 1 when rank 0 promises its next
// message within the communicator's deadline: it has work, or it sends
// heartbeats while idle; 0 when it may wait on a person, as chat does),
// then, when the payload is not empty, the payload broadcast: the commands
// back to back, each a u8 op followed by its fields (step_message.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/sampling/grammar/grammar.h"
#include "kvforge/request.h"
#include "kvforge/sampling_params.h"

namespace kvforge {

enum class StepKind : uint32_t {
  Step = 1,      // apply the commands, then run one engine step
  Idle = 2,      // apply the commands only (rank 0 has nothing to run; a heartbeat)
  Shutdown = 3,  // apply the commands and return: the run is over
};

struct AddCommand {
  RequestId id = 0;  // the id rank 0's engine gave it; the others must give the same
  std::vector<int32_t> prompt;
  // With the seed fixed by rank 0. The grammar travels as its rules: decoded,
  // params.grammar is null and `rules` holds them for the follower to bind.
  SamplingParams params;
  std::shared_ptr<const Grammar> rules;
  int n = 1;
  LogprobOptions logprobs;
};

struct StepCommand {
  enum class Op : uint8_t { Add = 1, Abort = 2, StopBranch = 3 } op = Op::Add;
  AddCommand add;      // Op::Add
  RequestId id = 0;    // Op::Abort, Op::StopBranch
  int32_t branch = 0;  // Op::StopBranch
};

struct StepMessage {
  StepKind kind = StepKind::Step;
  std::vector<StepCommand> commands;
};

inline constexpr size_t kStepHeaderBytes = 24;

// The payload of `commands`. Decoding checks every length against the bytes
// left and throws std::runtime_error naming the field when it does not fit.
std::vector<uint8_t> encode_commands(const std::vector<StepCommand>& commands);
std::vector<StepCommand> decode_commands(const uint8_t* data, size_t bytes, uint32_t count);

}  // namespace kvforge
