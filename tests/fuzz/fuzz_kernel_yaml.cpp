// Fuzz harness: a kernel file (YAML, the template metakernel language) → the metakernel loader.
//
// `extends:` may name any built-in kernel. A file that loads must describe (tapestry kernels)
// and register without a crash.
#include <memory>
#include <string>

#include "fuzz_support.h"
#include "tapestry/metakernel/describe.h"
#include "tapestry/metakernel/loader.h"
#include "tapestry/metakernel/signature_registry.h"

using namespace tapestry;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const metakernel::SignatureRegistry& builtins = metakernel::builtin_signatures();
  try {
    auto file = std::make_shared<const metakernel::SourceFile>(
        "fuzz.yaml", std::string(fuzz::as_text(data, size)));
    std::vector<metakernel::Metakernel> loaded = metakernel::parse_kernels(
        file, [&builtins](std::string_view name) { return builtins.find(name); });
    metakernel::SignatureRegistry registry;
    for (metakernel::Metakernel& kernel : loaded) {
      (void)metakernel::describe_kernel(kernel);
      registry.add(std::move(kernel));
    }
    (void)metakernel::describe_kernels(registry);
  } catch (const Error&) {
    // Bad input, reported as it should be.
  }
  return 0;
}
