// Helpers for the metakernel tests: the built-in kernels from the source tree, tensor types from
// .tap declaration text, and signature evaluation from short literals.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/metakernel/signature.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_parser.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/text.h"

namespace tapestry::metakernel::testing {

/// The signatures of the kernel files in <repo>/kernels (tests never depend on an installed copy).
inline const SignatureRegistry& signatures() {
  static const SignatureRegistry registry =
      SignatureRegistry::from_directory(TAPESTRY_KERNELS_SOURCE_DIR);
  return registry;
}

/// A tensor type from .tap declaration syntax: tt("f32[-40:60, 20:32]").
inline TensorType tt(std::string_view text) {
  auto file = std::make_shared<const SourceFile>("<test>", "T: " + std::string(text) + "\n");
  tap::ParseResult parsed = tap::parse_program(file);
  if (!parsed.ok()) throw Error(format_diagnostics(parsed.diagnostics));
  return std::get<tap::Decl>(parsed.program.statements.at(0)).type;
}

/// Evaluates kernel `name` on inputs given as .tap types, labelled by their kernel input names
/// unless `labels` are given.
inline Signature eval(std::string_view name, const std::vector<std::string>& types,
                      const nlohmann::json& params = nlohmann::json::object(),
                      const std::vector<std::string>& labels = {}) {
  const Metakernel& k = signatures().resolve(name, types.size());
  std::vector<Argument> args;
  for (std::size_t i = 0; i < types.size(); ++i) {
    args.push_back(Argument{i < labels.size() ? labels[i] : "", tt(types[i])});
  }
  return evaluate_signature(k, args, params);
}

/// The message of the Error `eval(...)` throws ("" when it does not throw).
inline std::string eval_error(std::string_view name, const std::vector<std::string>& types,
                              const nlohmann::json& params = nlohmann::json::object(),
                              const std::vector<std::string>& labels = {}) {
  try {
    eval(name, types, params, labels);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// An IPF from rows, offset and shape.
inline zspace::IndexProjection ipf(const std::vector<std::vector<std::int64_t>>& rows,
                                   std::vector<std::int64_t> offset,
                                   std::vector<std::int64_t> shape,
                                   std::size_t in_rank_if_no_rows = 0) {
  return zspace::IndexProjection(
      zspace::AffineMap::from_rows(rows, zspace::Point(offset), in_rank_if_no_rows),
      zspace::Point(shape));
}

inline zspace::Range zr(std::string_view text) {
  return zspace::parse_range(text);
}

}  // namespace tapestry::metakernel::testing
