// KernelReader: reads one kernel YAML document into a Metakernel, one method per section.
// Private to the loader (loader.cpp reads the structure, loader_sections.cpp the sections with
// their own small grammars: params, lets, checks, reductions, ipfs, sugar).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "tapestry/metakernel/loader.h"
#include "tapestry/metakernel/metakernel.h"

namespace tapestry::metakernel::detail {

class KernelReader {
 public:
  KernelReader(SourceFilePtr file, KernelFinder find)
      : file_(std::move(file)), find_(std::move(find)) {}

  /// Reads one document; `earlier` are the kernels read before it from the same file.
  Metakernel read(const YAML::Node& doc, const std::vector<Metakernel>& earlier);

 private:
  Metakernel find_parent(const YAML::Node& node, const std::vector<Metakernel>& earlier);
  void read_body(const YAML::Node& node, Metakernel& k);
  std::string identifier(const YAML::Node& node, std::string_view what);
  std::vector<std::string> names(const YAML::Node& node, std::string_view what,
                                 bool strip_dollar = false);
  List list(const YAML::Node& node, std::string_view what);
  Expr expr(const YAML::Node& node, std::string_view what);
  DTypeSpec dtype(const YAML::Node& node);

  std::vector<std::pair<std::string, std::vector<DType>>> types(const YAML::Node& node);
  std::vector<InputSpec> inputs(const YAML::Node& node);
  std::vector<OutputSpec> outputs(const YAML::Node& node);
  StartSpec start(const YAML::Node& node);

  // loader_sections.cpp
  std::vector<ParamSpec> params(const YAML::Node& node);
  ParamSpec param(const YAML::Node& key, const YAML::Node& value);
  nlohmann::json param_value(const YAML::Node& node, const ParamSpec& spec);
  std::map<std::string, Expr> group_ranks(const YAML::Node& node);
  std::vector<LetSpec> lets(const YAML::Node& node);
  std::vector<CheckSpec> checks(const YAML::Node& node);
  std::vector<ReductionSpec> reductions(const YAML::Node& node);
  std::map<std::string, List> ipfs(const YAML::Node& node);
  std::vector<SugarSpec> sugar(const YAML::Node& node);
  void read_facts(const YAML::Node& node, Metakernel& k);
  // loader_vjp.cpp
  void read_vjp(const YAML::Node& node, Metakernel& k);

  SourceFilePtr file_;
  KernelFinder find_;
};

}  // namespace tapestry::metakernel::detail
