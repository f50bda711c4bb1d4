// Kernel plugins: dlopen, the checks of runtime/plugins.h, and the adapter that hands a
// KernelCall to a plugin's C function as the plain data of tapestry/plugin.h.
#include "tapestry/runtime/plugins.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "tapestry/metakernel/loader.h"
#include "tapestry/plugin.h"
#include "tapestry/runtime/kernel_path.h"
#include "tapestry/support/error.h"

namespace tapestry::runtime {

namespace fs = std::filesystem;

static_assert(TAPESTRY_FLOAT32 == static_cast<int>(ir::DType::kFloat32) &&
                  TAPESTRY_FLOAT64 == static_cast<int>(ir::DType::kFloat64) &&
                  TAPESTRY_INT32 == static_cast<int>(ir::DType::kInt32) &&
                  TAPESTRY_INT64 == static_cast<int>(ir::DType::kInt64),
              "TapestryDType follows ir::DType's executable rows");

namespace {

// The arrays one TapestryPort points into; filled once, then never moved.
struct PortData {
  std::vector<std::int64_t> box_start, box_end, strides, matrix, offset, shape;
};

// A KernelCall as tapestry/plugin.h's TapestryKernelCall, valid while this object lives.
class CallData {
 public:
  explicit CallData(const KernelCall& call)
      : kernel_(call.kernel),
        operation_(call.operation),
        params_(call.params != nullptr ? call.params->dump() : "null"),
        index_start_(call.index.start().begin(), call.index.start().begin() + call.index.rank()),
        index_end_(call.index.end().begin(), call.index.end().begin() + call.index.rank()),
        data_(call.inputs.size() + call.outputs.size()) {
    for (const std::string& name : call.index_names) index_names_.push_back(name.c_str());
    std::size_t k = 0;
    for (const auto& e : call.inputs.entries()) inputs_.push_back(port(call, e, data_[k++]));
    for (const auto& e : call.outputs.entries()) outputs_.push_back(port(call, e, data_[k++]));
  }

  [[nodiscard]] TapestryKernelCall view() const {
    return {.kernel = kernel_.c_str(),
            .operation = operation_.c_str(),
            .index_rank = static_cast<std::uint32_t>(index_start_.size()),
            .index_start = index_start_.data(),
            .index_end = index_end_.data(),
            .index_names = index_names_.data(),
            .params_json = params_.c_str(),
            .input_count = static_cast<std::uint32_t>(inputs_.size()),
            .inputs = inputs_.data(),
            .output_count = static_cast<std::uint32_t>(outputs_.size()),
            .outputs = outputs_.data()};
  }

 private:
  template <typename Entry>
  static TapestryPort port(const KernelCall& call, const Entry& e, PortData& d) {
    const auto& view = e.value.view;
    if (!ir::is_executable(view.dtype())) {
      call.fail(fmt::format("{}: dtype {} is not executable", e.name, view.dtype()));
    }
    const zspace::AffineMap& map = e.value.ipf->map();
    const std::size_t rank = view.box().rank();
    for (std::size_t k = 0; k < rank; ++k) {
      d.box_start.push_back(view.box().start()[k]);
      d.box_end.push_back(view.box().end()[k]);
      d.strides.push_back(view.stride(k));
      d.offset.push_back(map.offset()[k]);
      d.shape.push_back(e.value.ipf->shape()[k]);
      for (std::size_t j = 0; j < map.in_rank(); ++j) d.matrix.push_back(map.at(k, j));
    }
    return {.name = e.name.c_str(),
            .position = e.position,
            .dtype = static_cast<TapestryDType>(view.dtype()),
            .origin = const_cast<void*>(static_cast<const void*>(view.origin())),
            .rank = static_cast<std::uint32_t>(rank),
            .box_start = d.box_start.data(),
            .box_end = d.box_end.data(),
            .strides = d.strides.data(),
            .ipf_matrix = d.matrix.data(),
            .ipf_offset = d.offset.data(),
            .ipf_shape = d.shape.data()};
  }

  std::string kernel_, operation_, params_;
  std::vector<std::int64_t> index_start_, index_end_;
  std::vector<const char*> index_names_;
  std::vector<PortData> data_;
  std::vector<TapestryPort> inputs_, outputs_;
};

}  // namespace

KernelFn plugin_kernel(TapestryKernelFn fn, std::string library) {
  return [fn, path = std::move(library)](const KernelCall& call) {
    const CallData data(call);
    const TapestryKernelCall c = data.view();
    char error[1024] = {};
    if (fn(&c, error, sizeof error) != 0) {
      error[sizeof error - 1] = '\0';
      call.fail(
          fmt::format("{} (plugin {})", error[0] != '\0' ? error : "failed (no message)", path));
    }
    note_kernel_path(KernelPath::kPlugin);
  };
}

namespace {

// Closes a library on every error path before it is kept.
struct Library {
  void* handle = nullptr;
  ~Library() {
    if (handle != nullptr) dlclose(handle);
  }
};

std::vector<metakernel::Metakernel> parse_signatures(const std::string& path,
                                                     const TapestryPlugin& description) {
  const metakernel::SignatureRegistry& builtins = metakernel::builtin_signatures();
  const metakernel::KernelFinder find = [&](std::string_view name) { return builtins.find(name); };
  std::vector<metakernel::Metakernel> out;
  if (description.signatures != nullptr) {
    out = metakernel::parse_kernels(std::make_shared<const metakernel::SourceFile>(
                                        path + " (signatures)", description.signatures),
                                    find);
  }
  if (description.signature_file != nullptr) {
    const fs::path file = fs::path(path).parent_path() / description.signature_file;
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      throw Error(fmt::format("its signature file {} does not exist", file.string()));
    }
    for (metakernel::Metakernel& k : metakernel::load_kernel_file(file, find)) {
      out.push_back(std::move(k));
    }
  }
  return out;
}

// The kernels' names: each once, each with a signature of the plugin's, each with a function.
void check_kernels(const TapestryPlugin& description,
                   const std::vector<metakernel::Metakernel>& signatures) {
  std::set<std::string, std::less<>> named;
  for (const metakernel::Metakernel& k : signatures) named.insert(k.name);
  std::set<std::string, std::less<>> seen;
  for (std::size_t i = 0; i < description.kernel_count; ++i) {
    const TapestryKernel& k = description.kernels[i];
    if (k.name == nullptr) throw Error(fmt::format("kernel #{} has no name", i));
    if (!seen.insert(k.name).second) {
      throw Error(fmt::format("kernel {} is registered twice", k.name));
    }
    if (!named.contains(k.name)) {
      throw Error(fmt::format("kernel {} has no signature in the plugin (its signatures: {})",
                              k.name,
                              named.empty() ? "none" : fmt::format("{}", fmt::join(named, ", "))));
    }
    if (k.reference == nullptr && k.fast == nullptr) {
      throw Error(fmt::format("kernel {} has neither a reference nor a fast function", k.name));
    }
  }
}

std::unique_ptr<Plugin> open_plugin(const std::string& path, Library& library) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("no such file");
  // An absolute path: dlopen would search the library path for a bare name.
  library.handle = dlopen(fs::absolute(path).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library.handle == nullptr) {
    const char* why = dlerror();
    throw Error(fmt::format("not a loadable shared library ({})", why ? why : "dlopen failed"));
  }
  void* entry = dlsym(library.handle, TAPESTRY_PLUGIN_ENTRY);
  if (entry == nullptr) {
    throw Error(fmt::format("no entry point {} (a plugin exports it: tapestry/plugin.h)",
                            TAPESTRY_PLUGIN_ENTRY));
  }
  const TapestryPlugin* description = reinterpret_cast<TapestryPluginEntry>(entry)();
  if (description == nullptr) throw Error(fmt::format("{} returned null", TAPESTRY_PLUGIN_ENTRY));
  if (description->abi_version != TAPESTRY_PLUGIN_ABI_VERSION) {
    throw Error(fmt::format(
        "built against plugin ABI version {}, this tapestry loads version {}: rebuild it "
        "against this tapestry's tapestry/plugin.h",
        description->abi_version, TAPESTRY_PLUGIN_ABI_VERSION));
  }
  return std::make_unique<Plugin>(path, *description);
}

}  // namespace

Plugin::Plugin(std::string path, const TapestryPlugin& description)
    : path_(std::move(path)),
      description_(&description),
      signatures_(parse_signatures(path_, description)) {
  check_kernels(description, signatures_);
}

const Plugin& Plugin::load(const fs::path& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Plugin>> loaded;  // by canonical path
  const std::lock_guard lock(mutex);
  std::error_code ec;
  const std::string key = fs::weakly_canonical(path, ec).string();
  if (auto it = loaded.find(key); it != loaded.end()) return *it->second;
  Library library;
  try {
    std::unique_ptr<Plugin> plugin = open_plugin(path.string(), library);
    library.handle = nullptr;  // kept: kernel functions live in it until the process ends
    return *loaded.emplace(key, std::move(plugin)).first->second;
  } catch (const Error& e) {
    throw e.with_context(fmt::format("plugin {}", path.string()));
  }
}

void Plugin::add_signatures(metakernel::SignatureRegistry& registry) const {
  for (const metakernel::Metakernel& k : signatures_) {
    try {
      registry.add(k);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("plugin {}", path_));
    }
  }
}

void Plugin::add_kernels(ExecutableKernels& kernels, KernelSet set) const {
  for (std::size_t i = 0; i < description_->kernel_count; ++i) {
    const TapestryKernel& k = description_->kernels[i];
    if (kernels.find(k.name)) {
      throw Error(
          fmt::format("plugin {}: kernel {} is already an executable kernel", path_, k.name));
    }
    TapestryKernelFn fn = set == KernelSet::kFast ? k.fast : k.reference;
    if (fn == nullptr) fn = set == KernelSet::kFast ? k.reference : k.fast;
    kernels.add(k.name, plugin_kernel(fn, path_));
  }
}

}  // namespace tapestry::runtime
