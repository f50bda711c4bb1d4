// How a refused cut is worded: lower's check of the cuts (rewrite/lower.h) and the Evaluator's
// fast path (cost/evaluator.h), which refuses the same plans without lowering them again, say it
// alike.
//
//   cut_subject("Attn", "Attn")            == "operation 'Attn'"
//   cut_subject("Y", "Y/linear_nobias")    == "operation 'Y' (as 'Y/linear_nobias' after the
//   rewrites)" shard_grid_refusal("operation 'Attn'", "…") == "operation 'Attn': shard-grid cannot
//   cut it: …" plan_refusal({a, b})                   == "the plan cannot be carried out:\n  a\n b"
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace tapestry::rewrite {

/// An operation the plan names `origin`, which the rewrites left as `name`.
std::string cut_subject(std::string_view origin, std::string_view name);

/// `subject` (cut_subject) cannot be cut by shard-grid, for the reason `why`.
std::string shard_grid_refusal(std::string_view subject, std::string_view why);

/// The message of a plan whose cuts are refused: every problem, one per line.
std::string plan_refusal(std::span<const std::string> problems);

}  // namespace tapestry::rewrite
