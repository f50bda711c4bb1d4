// Older models, upgraded: an ONNX model whose default-domain opset is below kMinOpset is
// converted on import by ONNX's own version converter (libonnx's
// onnx::version_conversion::ConvertVersion, the adapters the ONNX project maintains), then
// imported as any other model:
//
//   OpsetUpgrade u = upgrade_opset(model, "old.onnx");   // opset 6
//   u.declared == 6, u.opset == kUpgradeTarget, u.converted() (u.model is the converted copy)
//
// A model at kMinOpset … kMaxOpset is returned as it is (no copy). An opset above kMaxOpset, a
// model with no default-domain opset, and a conversion the converter cannot do (an operator with
// no adapter, a malformed graph) are errors naming the file and the converter's reason.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <string>

#include "tapestry/onnx/import.h"

namespace tapestry::onnx {

struct OpsetUpgrade {
  std::int64_t declared = 0;  // the model's default-domain opset
  std::int64_t opset = 0;     // the opset imported: declared, or kUpgradeTarget
  std::shared_ptr<const ::onnx::ModelProto> owned;  // the converted model, when converted
  const ::onnx::ModelProto* model = nullptr;        // what to import

  [[nodiscard]] bool converted() const { return owned != nullptr; }
};

OpsetUpgrade upgrade_opset(const ::onnx::ModelProto& model, const std::string& source);

}  // namespace tapestry::onnx
