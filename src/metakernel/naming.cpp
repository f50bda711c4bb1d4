#include "tapestry/metakernel/naming.h"

#include <fmt/core.h>

#include <cctype>
#include <map>

namespace tapestry::metakernel {

std::vector<std::string> nested_names(std::string_view variable,
                                      std::span<const std::string> kernels) {
  std::vector<std::string> names;
  std::map<std::string, int, std::less<>> seen;
  for (std::size_t i = 0; i + 1 < kernels.size(); ++i) {
    const int n = ++seen[kernels[i]];
    names.push_back(n == 1 ? fmt::format("{}/{}", variable, kernels[i])
                           : fmt::format("{}/{}.{}", variable, kernels[i], n));
  }
  if (!kernels.empty()) names.emplace_back(variable);
  return names;
}

bool NameTable::is_taken(std::string_view name) const {
  return names_.find(name) != names_.end();
}

void NameTable::take(const std::string& name) {
  names_.insert(name);
}

void NameTable::release(const std::string& name) {
  names_.erase(name);
}

std::string NameTable::fresh(std::string_view base) const {
  if (!is_taken(base)) return std::string(base);
  for (int n = 2;; ++n) {
    std::string candidate = fmt::format("{}.{}", base, n);
    if (!is_taken(candidate)) return candidate;
  }
}

bool is_tap_identifier(std::string_view name) {
  if (name.empty()) return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_') return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '/')
      return false;
  }
  return true;
}

}  // namespace tapestry::metakernel
