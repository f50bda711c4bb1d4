// `tapestry kernels [NAME]`: list the kernels, or show one kernel's declaration; with --with,
// also evaluate its signature on concrete input types.
//
//   tapestry kernels
//   tapestry kernels conv2d
//   tapestry kernels linear --with 'f32[-40:60, 20:32]' 'f32[32, 12]' 'f32[32]'
//   tapestry kernels sum --with 'f32[4, 5, 6]' --param dim=1
//   tapestry kernels --kernel-dir my_kernels/     (adds user kernel files)
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/metakernel/describe.h"
#include "tapestry/metakernel/signature.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_parser.h"
#include "tapestry/support/error.h"

namespace tapestry::cli {

namespace {

struct KernelsOptions {
  std::string name;
  KernelSources kernel_sources;
  std::vector<std::string> with;
  std::vector<std::string> params;
};

metakernel::TensorType parse_type(const std::string& text) {
  auto file = std::make_shared<const metakernel::SourceFile>("--with", "t: " + text + "\n");
  metakernel::tap::ParseResult parsed = metakernel::tap::parse_program(file);
  if (!parsed.ok() || parsed.program.statements.size() != 1) {
    throw Error(
        fmt::format("--with: '{}' is not a tensor type such as f32[4, 8] or f32[-2:2, 8]", text));
  }
  return std::get<metakernel::tap::Decl>(parsed.program.statements[0]).type;
}

// `--param stride=2` uses the .tap keyword syntax: parse it as the keyword of a dummy call.
nlohmann::json parse_params(const std::vector<std::string>& params) {
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& p : params) {
    try {
      metakernel::tap::Call call = metakernel::tap::parse_call("p(" + p + ")", {1, 1});
      if (call.keywords.size() != 1 || !call.args.empty()) throw Error("");
      out[call.keywords[0].name] = call.keywords[0].value.value;
    } catch (const Error&) {
      throw Error(fmt::format("--param: '{}' is not name=value (e.g. stride=2, perm=[1, 0])", p));
    }
  }
  return out;
}

int run_kernels(const KernelsOptions& options) {
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  if (options.name.empty()) {
    fmt::print("{}", metakernel::describe_kernels(signatures));
    return kExitOk;
  }
  const metakernel::Metakernel& kernel =
      options.with.empty() ? signatures.get(options.name)
                           : signatures.resolve(options.name, options.with.size());
  fmt::print("{}", metakernel::describe_kernel(kernel));
  if (options.with.empty()) return kExitOk;
  std::vector<metakernel::Argument> args;
  for (const std::string& type : options.with) args.push_back({"", parse_type(type)});
  const metakernel::Signature sig =
      metakernel::evaluate_signature(kernel, args, parse_params(options.params));
  fmt::print("\nsignature for {}:\n{}", fmt::join(options.with, ", "), sig.to_string());
  return kExitOk;
}

}  // namespace

void register_kernels(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<KernelsOptions>();
  CLI::App* cmd =
      app.add_subcommand("kernels", "List the kernels, or show one kernel's signature and IPFs");
  cmd->add_option("name", options->name, "a kernel to show");
  add_kernel_source_options(*cmd, options->kernel_sources);
  cmd->add_option("--with", options->with,
                  "evaluate the signature on these input types, e.g. 'f32[4, 8]'");
  cmd->add_option("--param", options->params, "a parameter for --with, name=value (repeatable)");
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "kernels";
    dispatch.run = [options] { return run_kernels(*options); };
  });
}

}  // namespace tapestry::cli
