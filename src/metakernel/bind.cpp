// Input binding: match each input's dtype and shape against its pattern, binding type variables,
// named dimensions and variadic groups; then unify broadcast groups. Every mismatch names both
// arguments involved ("linear: X has 12 columns but W has 16 (its in dimension)").
#include <fmt/format.h>

#include "bindings.h"

namespace tapestry::metakernel::detail {

Bindings::Bindings(const Metakernel& k, std::span<const Argument> a) : kernel(k), args(a) {}

std::string Bindings::label(std::size_t input) const {
  if (input < args.size() && !args[input].label.empty()) return args[input].label;
  return input < kernel.inputs.size() ? kernel.inputs[input].name : "?";
}

const GroupOccurrence* GroupBinding::in_input(std::size_t input) const {
  for (const GroupOccurrence& o : occurrences) {
    if (o.input == input) return &o;
  }
  return nullptr;
}

ExprEnv Bindings::scalar_env() const {
  ExprEnv env;
  env.size = [this](std::string_view name) -> std::optional<std::int64_t> {
    if (auto it = dims.find(std::string(name)); it != dims.end()) return it->second.size;
    return std::nullopt;
  };
  env.param = [this](std::string_view name) -> std::optional<std::int64_t> {
    if (!params.contains(name)) return std::nullopt;
    const nlohmann::json& v = params.at(std::string(name));
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    if (v.is_number_integer()) return v.get<std::int64_t>();
    return std::nullopt;
  };
  return env;
}

std::string describe_dim(std::size_t rank, std::size_t dim, std::int64_t size) {
  if (rank == 1) return fmt::format("{} elements", size);
  if (dim + 1 == rank) return fmt::format("{} columns", size);
  if (dim + 2 == rank) return fmt::format("{} rows", size);
  return fmt::format("{} in dim {}", size, dim);
}

namespace {

void bind_dtype(Bindings& b, std::size_t i) {
  const DTypeSpec& spec = b.kernel.inputs[i].dtype;
  const DType got = b.args[i].type.dtype;
  if (spec.fixed) {
    if (got != *spec.fixed)
      b.fail("{} must be {}, got {}", b.label(i), ir::dtype_short_name(*spec.fixed),
             ir::dtype_short_name(got));
    return;
  }
  if (auto it = b.types.find(spec.var); it != b.types.end()) {
    if (it->second == got) return;
    std::size_t first = 0;
    while (b.kernel.inputs[first].dtype.var != spec.var) ++first;
    b.fail("{} is {} but {} is {} (both have type {})", b.label(i), ir::dtype_short_name(got),
           b.label(first), ir::dtype_short_name(it->second), spec.var);
  }
  for (const auto& [var, allowed] : b.kernel.types) {
    if (var != spec.var) continue;
    if (std::find(allowed.begin(), allowed.end(), got) == allowed.end()) {
      std::vector<std::string_view> names;
      for (DType d : allowed) names.push_back(ir::dtype_short_name(d));
      b.fail("{} is {}, but {} must be one of {}", b.label(i), ir::dtype_short_name(got), spec.var,
             fmt::join(names, ", "));
    }
  }
  b.types[spec.var] = got;
}

std::string shape_of(const Bindings& b, std::size_t i) {
  return b.args[i].type.to_string();
}

// The lengths of the pattern's groups: known ones from group_ranks or an earlier (non-broadcast)
// binding; at most one may be free and takes the remaining rank.
std::vector<std::size_t> group_lengths(Bindings& b, std::size_t i) {
  const List& pattern = b.kernel.inputs[i].shape;
  const std::size_t rank = b.args[i].type.rank();
  std::size_t fixed = 0;
  std::optional<std::size_t> free_entry;
  std::vector<std::size_t> lengths(pattern.size(), 1);
  for (std::size_t e = 0; e < pattern.size(); ++e) {
    if (pattern[e].kind != ListEntry::Kind::kGroup) {
      ++fixed;
      continue;
    }
    const std::string& g = pattern[e].group;
    if (auto r = b.kernel.group_ranks.find(g); r != b.kernel.group_ranks.end()) {
      const std::int64_t n = r->second.evaluate(b.scalar_env());
      if (n < 0) b.fail("group ${}... would have {} dimensions", g, n);
      lengths[e] = static_cast<std::size_t>(n);
    } else if (auto bound = b.groups.find(g);
               bound != b.groups.end() && !b.kernel.is_broadcast(g)) {
      lengths[e] = bound->second.sizes.size();
    } else if (!free_entry) {
      free_entry = e;
      continue;
    } else {
      b.fail("input {} has two groups of unknown length (give one a length with group_ranks)",
             b.kernel.inputs[i].name);
    }
    fixed += lengths[e];
  }
  const std::string pattern_text = list_to_string(pattern);
  if (free_entry) {
    if (rank < fixed) {
      b.fail("{} must have rank at least {} ({} is {}) but it is {}", b.label(i), fixed,
             b.kernel.inputs[i].name, pattern_text, shape_of(b, i));
    }
    lengths[*free_entry] = rank - fixed;
  } else if (rank != fixed) {
    b.fail("{} must have rank {} ({} is {}) but it is {}", b.label(i), fixed,
           b.kernel.inputs[i].name, pattern_text, shape_of(b, i));
  }
  return lengths;
}

void bind_dim(Bindings& b, std::size_t i, std::size_t dim, const ListEntry& entry) {
  const std::int64_t size = b.args[i].type.extent(dim);
  const std::size_t rank = b.args[i].type.rank();
  if (!entry.is_dim()) {  // an integer literal (the loader admits nothing else)
    const std::int64_t want = entry.expr->evaluate(b.scalar_env());
    if (size != want) {
      b.fail("{} must have {} but it has {} ({} is {})", b.label(i), describe_dim(rank, dim, want),
             size, b.kernel.inputs[i].name, list_to_string(b.kernel.inputs[i].shape));
    }
    return;
  }
  const std::string& name = entry.dim_name();
  auto [it, inserted] = b.dims.try_emplace(name, DimBinding{size, i, dim});
  if (inserted || it->second.size == size) return;
  const DimBinding& first = it->second;
  b.fail("{} has {} but {} has {} (its {} dimension)", b.label(first.input),
         describe_dim(b.args[first.input].type.rank(), first.dim, first.size), b.label(i), size,
         name);
}

void bind_group(Bindings& b, std::size_t i, std::size_t first_dim, std::size_t length,
                const std::string& g) {
  GroupOccurrence occurrence{i, first_dim, {}};
  for (std::size_t k = 0; k < length; ++k)
    occurrence.sizes.push_back(b.args[i].type.extent(first_dim + k));
  auto [it, inserted] = b.groups.try_emplace(g);
  GroupBinding& group = it->second;
  if (!inserted && !b.kernel.is_broadcast(g) && group.sizes != occurrence.sizes) {
    const GroupOccurrence& first = group.occurrences.front();
    b.fail("{} has {} dims {} but {} has {} (its {} dimensions)", b.label(first.input), g,
           shape_string(zspace::Point(first.sizes)), b.label(i),
           shape_string(zspace::Point(occurrence.sizes)), g);
  }
  if (inserted) group.sizes = occurrence.sizes;
  group.occurrences.push_back(std::move(occurrence));
}

void bind_shape(Bindings& b, std::size_t i) {
  const List& pattern = b.kernel.inputs[i].shape;
  const std::vector<std::size_t> lengths = group_lengths(b, i);
  std::size_t dim = 0;
  for (std::size_t e = 0; e < pattern.size(); ++e) {
    if (pattern[e].kind == ListEntry::Kind::kGroup) {
      bind_group(b, i, dim, lengths[e], pattern[e].group);
      dim += lengths[e];
    } else {
      bind_dim(b, i, dim++, pattern[e]);
    }
  }
}

// numpy broadcasting: right-align all occurrences; each dim must agree or be 1.
void unify_broadcast(Bindings& b, const std::string& g, GroupBinding& group) {
  std::size_t rank = 0;
  for (const GroupOccurrence& o : group.occurrences) rank = std::max(rank, o.sizes.size());
  std::vector<std::int64_t> out(rank, 1);
  for (const GroupOccurrence& o : group.occurrences) {
    const std::size_t pad = rank - o.sizes.size();
    for (std::size_t k = 0; k < o.sizes.size(); ++k) {
      std::int64_t& slot = out[pad + k];
      if (o.sizes[k] == slot || o.sizes[k] == 1) continue;
      if (slot != 1) {
        const GroupOccurrence& first = group.occurrences.front();
        b.fail("{} {} and {} {} do not broadcast (dim {} of the broadcast ${}...: {} vs {})",
               b.label(first.input), shape_string(zspace::Point(first.sizes)), b.label(o.input),
               shape_string(zspace::Point(o.sizes)), pad + k, g, slot, o.sizes[k]);
      }
      slot = o.sizes[k];
    }
  }
  group.sizes = std::move(out);
}

}  // namespace

void bind_inputs(Bindings& b) {
  for (std::size_t i = 0; i < b.kernel.inputs.size(); ++i) {
    bind_dtype(b, i);
    bind_shape(b, i);
  }
  for (auto& [name, group] : b.groups) {
    if (b.kernel.is_broadcast(name)) unify_broadcast(b, name, group);
  }
}

}  // namespace tapestry::metakernel::detail
