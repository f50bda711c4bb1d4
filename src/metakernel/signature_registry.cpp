#include "tapestry/metakernel/signature_registry.h"

#include "tapestry/metakernel/kernel_facts.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "tapestry/metakernel/autodiff.h"
#include "tapestry/metakernel/loader.h"
#include "tapestry/support/error.h"

namespace tapestry::metakernel {

namespace fs = std::filesystem;

SignatureRegistry SignatureRegistry::with_builtins() {
  return from_directory(default_kernel_dir());
}

SignatureRegistry SignatureRegistry::from_directory(const fs::path& dir) {
  SignatureRegistry registry;
  registry.load_directory(dir);
  return registry;
}

void SignatureRegistry::load_directory(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(fmt::format("kernel directory {} does not exist", dir.string()));
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<const Metakernel*> loaded;
  for (const fs::path& file : files) {
    for (const Metakernel* k : load_file_unchecked(file)) loaded.push_back(k);
  }
  check_vjp_kernels(loaded, *this);  // after all: a VJP may call a kernel of a later file
}

void SignatureRegistry::load_file(const fs::path& path) {
  check_vjp_kernels(load_file_unchecked(path), *this);
}

std::vector<const Metakernel*> SignatureRegistry::load_file_unchecked(const fs::path& path) {
  std::vector<Metakernel> kernels =
      load_kernel_file(path, [this](std::string_view name) { return find(name); });
  std::vector<const Metakernel*> added;
  for (Metakernel& k : kernels) {
    const std::string name = k.name;
    add(std::move(k));
    added.push_back(find(name));
  }
  return added;
}

void SignatureRegistry::add(Metakernel kernel) {
  auto where = [](const Metakernel& k) {
    return k.file ? " (" + k.file->name() + ")" : std::string();
  };
  if (const Metakernel* existing = find(kernel.name)) {
    throw Error(fmt::format("kernel {}{} is already defined{}", kernel.name, where(kernel),
                            where(*existing)));
  }
  const std::string name = kernel.name;
  if (kernel.facts) detail::publish_kernel_facts(name, *kernel.facts);
  for (const std::string& alias : kernel.aliases) aliases_.emplace(alias, name);
  kernels_.emplace(name, std::make_unique<Metakernel>(std::move(kernel)));
}

const Metakernel* SignatureRegistry::find(std::string_view name) const {
  const auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : it->second.get();
}

namespace {

// Edit distance, for "did you mean" hints.
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

const Metakernel& SignatureRegistry::get(std::string_view name) const {
  if (const Metakernel* k = find(name)) return *k;
  std::vector<std::string> near;
  for (const auto& [known, kernel] : kernels_) {
    if (distance(name, known) <= 2) near.push_back(known);
  }
  const std::string hint = near.empty() ? " (`tapestry kernels` lists them)"
                                        : fmt::format(" (did you mean {}?)", fmt::join(near, ", "));
  throw Error(fmt::format("unknown kernel '{}'{}", name, hint));
}

const Metakernel& SignatureRegistry::resolve(std::string_view name, std::size_t num_inputs) const {
  std::vector<const Metakernel*> candidates;
  if (const Metakernel* k = find(name)) candidates.push_back(k);
  const auto [lo, hi] = aliases_.equal_range(name);
  for (auto it = lo; it != hi; ++it) candidates.push_back(find(it->second));
  for (const Metakernel* k : candidates) {
    if (k->inputs.size() == num_inputs) return *k;
  }
  if (candidates.size() == 1) return *candidates.front();
  if (candidates.empty()) return get(name);
  std::vector<std::string> forms;
  for (const Metakernel* k : candidates) forms.push_back(k->call_form());
  throw Error(fmt::format("{} with {} tensor argument{}: no such form (forms: {})", name,
                          num_inputs, num_inputs == 1 ? "" : "s", fmt::join(forms, "; ")));
}

std::vector<const Metakernel*> SignatureRegistry::metakernels() const {
  std::vector<const Metakernel*> out;
  for (const auto& [name, kernel] : kernels_) out.push_back(kernel.get());
  return out;
}

fs::path default_kernel_dir() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  // TAPESTRY_BUILTIN_KERNELS moves the built-ins (a relocated install); TAPESTRY_KERNELS adds
  // user kernels to them and is read by the CLI, not here.
  if (const char* env = std::getenv("TAPESTRY_BUILTIN_KERNELS"); env && *env) {
    if (!fs::is_directory(env, ec))
      throw Error(fmt::format("TAPESTRY_BUILTIN_KERNELS={} is not a directory", env));
    return env;
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "tapestry" / "kernels");
#ifdef TAPESTRY_KERNELS_INSTALL_DIR
  candidates.emplace_back(TAPESTRY_KERNELS_INSTALL_DIR);
#endif
#ifdef TAPESTRY_KERNELS_SOURCE_DIR
  candidates.emplace_back(TAPESTRY_KERNELS_SOURCE_DIR);
#endif
  for (const fs::path& dir : candidates) {
    if (fs::is_directory(dir, ec)) return dir;
  }
  std::vector<std::string> tried;
  for (const fs::path& dir : candidates) tried.push_back(dir.string());
  throw Error(
      fmt::format("cannot find the built-in kernels (tried: {}); set TAPESTRY_BUILTIN_KERNELS",
                  fmt::join(tried, ", ")));
}

const SignatureRegistry& builtin_signatures() {
  static const SignatureRegistry registry = SignatureRegistry::with_builtins();
  return registry;
}

}  // namespace tapestry::metakernel
