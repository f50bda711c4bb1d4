// The generators' shared view of a rank's program (rank_order.h).
#include "rank_order.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tapestry/rewrite/fused.h"

namespace tapestry::codegen::detail {

GlobalPlaces global_places(const runtime::detail::BlockProgram& whole,
                           const runtime::detail::RankProgram& rp) {
  GlobalPlaces out;
  out.messages_after.resize(whole.tasks.size());
  std::vector<char> replaced(rp.messages.size(), 0);
  for (const runtime::detail::RankCollective& c : rp.collectives) {
    for (std::uint32_t m : c.replaced) replaced[m] = 1;
  }
  for (std::uint32_t m = 0; m < rp.messages.size(); ++m) {
    if (replaced[m] == 0) out.messages_after[rp.messages[m].producer].push_back(m);
  }
  std::vector<std::size_t> position(whole.tasks.size());
  for (std::size_t i = 0; i < whole.order.size(); ++i) position[whole.order[i]] = i;
  out.collectives_after.resize(whole.tasks.size());
  for (std::uint32_t c = 0; c < rp.collectives.size(); ++c) {
    std::uint32_t last = rp.collectives[c].producers.front();
    for (std::uint32_t t : rp.collectives[c].producers) {
      if (position[t] > position[last]) last = t;
    }
    out.collectives_after[last].push_back(c);
  }
  return out;
}

std::string range_text(const zspace::Range& box) {
  std::vector<std::string> dims;
  for (std::size_t d = 0; d < box.rank(); ++d) {
    dims.push_back(fmt::format("{}:{}", box.start()[d], box.end()[d]));
  }
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

std::string index_text(const runtime::KernelCall& call) {
  std::vector<std::string> dims;
  for (std::size_t d = 0; d < call.index.rank(); ++d) {
    dims.push_back(fmt::format(
        "{} {}:{}", d < call.index_names.size() ? call.index_names[d] : fmt::format("d{}", d),
        call.index.start()[d], call.index.end()[d]));
  }
  return dims.empty() ? std::string("one point") : fmt::format("{}", fmt::join(dims, ", "));
}

std::string kernel_text(const runtime::KernelCall& call, std::string_view prefix) {
  if (call.kernel != rewrite::kFusedKernel || call.params == nullptr) {
    return std::string(call.kernel);
  }
  std::vector<std::string> chain;
  for (const rewrite::FusedStage& s : rewrite::fused_stages(*call.params))
    chain.push_back(s.kernel);
  return fmt::format("{}{}", prefix, fmt::join(chain, " ⇒ "));
}

Names::Names(std::initializer_list<const char*> reserved,
             std::initializer_list<const char*> reserved_prefixes)
    : used_(reserved.begin(), reserved.end()),
      reserved_prefixes_(reserved_prefixes.begin(), reserved_prefixes.end()) {}

std::string Names::make(std::string_view wanted) {
  std::string name;
  for (char c : wanted) name += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
  const bool reserved_prefix =
      std::any_of(reserved_prefixes_.begin(), reserved_prefixes_.end(),
                  [&](const std::string& p) { return name.starts_with(p); });
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0 || name[0] == '_' ||
      reserved_prefix) {
    name = "t_" + name;
  }
  if (used_.insert(name).second) return name;
  for (int i = 2;; ++i) {
    std::string numbered = fmt::format("{}_{}", name, i);
    if (used_.insert(numbered).second) return numbered;
  }
}

}  // namespace tapestry::codegen::detail
