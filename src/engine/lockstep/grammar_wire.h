// A compiled grammar's rules on the step-message wire (step_message.h): rank
// 0 sends the rules of a request's grammar, and every other rank binds them
// to its own vocabulary (FollowerGrammars), so that all ranks mask the same
// tokens and sample in lockstep.
//
// Layout (little-endian): u32 root, then five arrays, each a u64 count of
// items followed by the items: elements {u8 kind, u32 value}; byte sets
// {4 x u64}; alternatives {u64 count, u32 positions}; rule names {u64 bytes,
// bytes}; token references as written {u64 bytes, bytes} (each rank binds
// them to ids). Decoding checks every index against what it points into.
#pragma once

#include "core/byte_codec.h"
#include "engine/sampling/grammar/grammar.h"
#include "engine/sampling/grammar/grammar_constraint.h"

namespace kvforge {

void put_grammar(ByteWriter& w, const Grammar& g);
// Throws std::runtime_error naming the field that does not fit (via `r`'s
// short-read handler) or the index that points outside the grammar.
Grammar get_grammar(ByteReader& r);

// The rules `c` was built from: its grammar less the sentinel (an element
// that takes no byte, closed by an End) the constraint appends to them.
// Rank 0 sends these, so that a follower's constraint is built from the very
// rules rank 0's was. Throws std::logic_error when the sentinel is not there.
Grammar source_rules(const GrammarConstraint& c);

// Whether two grammars have the same rules (the follower's cache key).
bool same_rules(const Grammar& a, const Grammar& b);

}  // namespace kvforge
