// Kernel facts: names of the enums and the process-wide lookup (kernel_facts.h).
#include "tapestry/metakernel/kernel_facts.h"

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "tapestry/metakernel/signature_registry.h"

namespace tapestry::metakernel {

namespace {

constexpr std::array<std::pair<std::string_view, KernelClass>, 6> kClasses = {{
    {"elementwise", KernelClass::kElementwise},
    {"contraction", KernelClass::kContraction},
    {"reduction", KernelClass::kReduction},
    {"window", KernelClass::kWindow},
    {"normalization", KernelClass::kNormalization},
    {"layout", KernelClass::kLayout},
}};

// `fallback` is not accepted from YAML under that name (parse_error_rule skips it): a kernel
// declares it as `worst_case` — the same worst-case bar, for a kernel (the training kernels of
// kernels/training.yaml) that no finer rule bounds — and error_rule_name calls it that.
constexpr std::array<std::pair<std::string_view, ErrorRule>, 16> kRules = {{
    {"bilinear", ErrorRule::kBilinear},
    {"additive", ErrorRule::kAdditive},
    {"product", ErrorRule::kProduct},
    {"selection", ErrorRule::kSelection},
    {"elementwise", ErrorRule::kElementwise},
    {"softmax", ErrorRule::kSoftmax},
    {"average", ErrorRule::kAverage},
    {"variance", ErrorRule::kVariance},
    {"move", ErrorRule::kMove},
    {"index", ErrorRule::kIndex},
    {"decision", ErrorRule::kDecision},
    {"choice", ErrorRule::kChoice},
    {"gate", ErrorRule::kGate},
    {"monoid", ErrorRule::kMonoid},
    {"worst_case", ErrorRule::kFallback},
    {"fallback", ErrorRule::kFallback},
}};

// Facts of kernels added to any registry, by name; stable addresses.
struct Catalog {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<const KernelFacts>, std::less<>> facts;
};

Catalog& catalog() {
  static Catalog c;
  return c;
}

}  // namespace

std::string_view kernel_class_name(KernelClass kind) {
  for (const auto& [name, k] : kClasses) {
    if (k == kind) return name;
  }
  return "?";
}

std::optional<KernelClass> parse_kernel_class(std::string_view text) {
  for (const auto& [name, k] : kClasses) {
    if (name == text) return k;
  }
  return std::nullopt;
}

std::string_view error_rule_name(ErrorRule rule) {
  for (const auto& [name, r] : kRules) {
    if (r == rule) return name;
  }
  return "?";
}

std::optional<ErrorRule> parse_error_rule(std::string_view text) {
  for (const auto& [name, r] : kRules) {
    if (name == text && (r != ErrorRule::kFallback || name == "worst_case")) return r;
  }
  return std::nullopt;
}

const KernelFacts* find_kernel_facts(std::string_view kernel) {
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  // The built-ins first: a user registry cannot shadow them (nor take their names).
  if (const Metakernel* k = builtin_signatures().find(kernel)) {
    return k->facts ? &*k->facts : nullptr;
  }
  Catalog& c = catalog();
  const std::lock_guard lock(c.mutex);
  const auto found = c.facts.find(kernel);
  return found == c.facts.end() ? nullptr : found->second.get();
}

const KernelFacts& kernel_facts(std::string_view kernel) {
  const KernelFacts* facts = find_kernel_facts(kernel);
  return facts != nullptr ? *facts : kUnknownKernelFacts;
}

namespace detail {

void publish_kernel_facts(std::string_view kernel, const KernelFacts& facts) {
  Catalog& c = catalog();
  const std::lock_guard lock(c.mutex);
  if (c.facts.find(kernel) == c.facts.end()) {
    c.facts.emplace(std::string(kernel), std::make_unique<const KernelFacts>(facts));
  }
}

}  // namespace detail

}  // namespace tapestry::metakernel
