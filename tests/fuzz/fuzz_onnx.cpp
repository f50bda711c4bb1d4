// Fuzz harness: the bytes of an ONNX model → the importer (import_onnx_bytes, the in-memory form
// of `tapestry import`). Any input gives a graph or a tapestry::Error; a graph that imports has
// at least one output and one input or weight.
#include "fuzz_support.h"
#include "tapestry/onnx/import.h"

using namespace tapestry;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const onnx::ImportResult r =
        onnx::import_onnx_bytes(fuzz::as_text(data, size), "fuzz.onnx", {});
    FUZZ_CHECK(!r.outputs.empty());
  } catch (const Error&) {
    // Bad input, reported as it should be.
  }
  return 0;
}
