#include "opset.h"

#include <fmt/format.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include "tapestry/onnx/import.h"
#include "tapestry/support/error.h"

namespace tapestry::onnx {

namespace {

std::int64_t declared_opset(const ::onnx::ModelProto& model, const std::string& source) {
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  }
  throw Error(fmt::format("{}: the model imports no default-domain (ai.onnx) opset", source));
}

}  // namespace

OpsetUpgrade upgrade_opset(const ::onnx::ModelProto& model, const std::string& source) {
  OpsetUpgrade u;
  u.declared = declared_opset(model, source);
  u.opset = u.declared;
  u.model = &model;
  if (u.declared > kMaxOpset || u.declared < 1) {
    throw Error(
        fmt::format("{}: opset {} is not supported (opsets 1 to {} are; those below {} are "
                    "converted to opset {} on import)",
                    source, u.declared, kMaxOpset, kMinOpset, kUpgradeTarget));
  }
  if (u.declared >= kMinOpset) return u;
  // The adapters of opset 6's broadcasting ops (Add, Gemm … with `broadcast=1`) and of
  // Softmax 12 → 13 need the shapes of their inputs, which an old export records for the
  // model's inputs only: ONNX's shape inference fills in the rest first, as the converter's
  // Python binding does. What inference cannot do leaves those shapes unknown (the converter
  // then says what it lacks).
  ::onnx::ModelProto inferred = model;
  try {
    ::onnx::shape_inference::InferShapes(inferred);
  } catch (const std::exception&) {
    inferred = model;
  }
  try {
    auto converted = std::make_shared<::onnx::ModelProto>(
        ::onnx::version_conversion::ConvertVersion(inferred, static_cast<int>(kUpgradeTarget)));
    u.owned = converted;
    u.model = converted.get();
  } catch (const std::exception& e) {
    throw Error(
        fmt::format("{}: opset {} could not be converted to opset {} by ONNX's version "
                    "converter: {}",
                    source, u.declared, kUpgradeTarget, e.what()));
  }
  u.opset = kUpgradeTarget;
  return u;
}

}  // namespace tapestry::onnx
