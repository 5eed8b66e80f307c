// `kvforge grammar bench -m MODEL FILE...`: time per token of the grammar
// engine on a model's vocabulary, over random walks of each grammar or schema
// (a token drawn uniformly among those allowed at each step): the mask
// (allowed tokens) and the advance, as p50 / p99 / max in microseconds, and
// the time to the first mask (compile included).
#pragma once

#include <string>
#include <vector>

#include "app/structured/constraint_spec.h"
#include "engine/sampling/grammar/grammar_constraint.h"

namespace kvforge::cli {

// The grammar in a file: a JSON schema if its name ends in .json (or
// `schema`), else GBNF. Throws std::invalid_argument if it cannot be read.
ConstraintSpec constraint_spec_of_file(const std::string& path, bool schema);

// `limits` bind every grammar: turning a shortcut off (class walks,
// repetition shifts, cached unions) gives the baseline it is measured against.
void run_grammar_bench(const std::string& model, const std::vector<std::string>& files, int walks,
                       int max_steps, const ConstraintLimits& limits = {});

}  // namespace kvforge::cli
