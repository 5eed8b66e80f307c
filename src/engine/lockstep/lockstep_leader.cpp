#include "engine/lockstep/lockstep_leader.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

struct Header {
  uint32_t kind;
  uint32_t n_commands;
  uint64_t payload_bytes;
  uint32_t prompt;  // the next message comes within the deadline
  uint32_t zero;
};
static_assert(sizeof(Header) == kStepHeaderBytes);

// `prompt`: whether rank 0 promised this message within the deadline; if
// not, waits for it as long as it takes (rank 0 may be waiting on a person).
StepMessage receive(Communicator& comm, bool prompt, Header& h) {
  const double deadline = comm.deadline();
  if (!prompt) comm.set_deadline(0);
  try {
    comm.broadcast(&h, sizeof h, 0);
  } catch (...) {
    comm.set_deadline(deadline);
    throw;
  }
  comm.set_deadline(deadline);
  std::vector<uint8_t> payload(h.payload_bytes);
  if (h.payload_bytes) comm.broadcast(payload.data(), payload.size(), 0);
  if (h.kind < 1 || h.kind > 3)
    throw std::runtime_error("step message from rank 0: unknown kind " + std::to_string(h.kind));
  return {StepKind(h.kind), decode_commands(payload.data(), payload.size(), h.n_commands)};
}

void apply(const StepCommand& c, Engine& engine, int rank, FollowerGrammars& grammars) {
  switch (c.op) {
    case StepCommand::Op::Add: {
      SamplingParams params = c.add.params;
      if (c.add.rules) params.grammar = grammars.bind(*c.add.rules);
      const RequestId id = engine.add_request(c.add.prompt, params, c.add.n, c.add.logprobs);
      if (id != c.add.id)
        throw std::runtime_error("tensor parallel: rank " + std::to_string(rank) +
                                 " gave a request id " + std::to_string(id) + ", rank 0 gave " +
                                 std::to_string(c.add.id) + ": the ranks diverged");
      break;
    }
    case StepCommand::Op::Abort:
      engine.abort(c.id);
      break;
    case StepCommand::Op::StopBranch:
      engine.stop_branch(c.id, c.branch);
      break;
  }
}

}  // namespace

LockstepLeader::LockstepLeader(Communicator& comm, std::function<bool()> unfinished)
    : comm_(comm), unfinished_(std::move(unfinished)) {}

LockstepLeader::~LockstepLeader() {
  if (broken_) return;  // the others end on their own (their deadline, or MPI_Abort)
  try {
    shutdown();
  } catch (const std::exception&) {
    // The others end on their own when a broadcast fails (a peer is gone).
  }
}

void LockstepLeader::added(RequestId id, std::span<const int32_t> prompt,
                           const SamplingParams& params, int n, LogprobOptions logprobs) {
  StepCommand c;
  c.add.id = id;
  c.add.params = params;
  c.add.prompt.assign(prompt.begin(), prompt.end());
  c.add.n = n;
  c.add.logprobs = logprobs;
  pending_.push_back(std::move(c));
}

void LockstepLeader::aborted(RequestId id) {
  StepCommand c;
  c.op = StepCommand::Op::Abort;
  c.id = id;
  pending_.push_back(c);
}

void LockstepLeader::stopped(RequestId id, int branch) {
  StepCommand c;
  c.op = StepCommand::Op::StopBranch;
  c.id = id;
  c.branch = branch;
  pending_.push_back(c);
}

void LockstepLeader::idle() {
  heartbeats_ = true;
  send(StepKind::Idle);
}

void LockstepLeader::shutdown() {
  if (ended_) return;
  ended_ = true;
  send(StepKind::Shutdown);
}

void LockstepLeader::send(StepKind kind) {
  std::vector<uint8_t> payload = encode_commands(pending_);
  const bool prompt = heartbeats_ || unfinished_();
  Header h{uint32_t(kind), uint32_t(pending_.size()), payload.size(), prompt, 0};
  pending_.clear();
  try {
    comm_.broadcast(&h, sizeof h, 0);
    if (!payload.empty()) comm_.broadcast(payload.data(), payload.size(), 0);
  } catch (const CommunicationError&) {
    broken_ = true;
    throw;
  }
}

void follow_leader(Engine& engine, Communicator& comm, GrammarVocabularySource vocabulary) {
  FollowerGrammars grammars(std::move(vocabulary));
  Header h{};
  for (;;) {
    const StepMessage m = receive(comm, h.prompt != 0, h);
    for (const StepCommand& c : m.commands) apply(c, engine, comm.rank(), grammars);
    if (m.kind == StepKind::Shutdown) return;
    if (m.kind == StepKind::Step) engine.step();
  }
}

}  // namespace kvforge
