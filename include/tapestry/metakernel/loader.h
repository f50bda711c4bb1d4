// Reading kernel files: YAML text in the template metakernel language -> Metakernel values.
//
// A kernel file holds one kernel per YAML document (documents are separated by `---`). A kernel
// may `extends:` an earlier one (from the same file or already loaded) and override fields, so
// the unary elementwise family is written once:
//
//   kernel: relu
//   types: {T: any}
//   inputs: {x: {shape: "[$d...]", dtype: T}}
//   ...
//   ---
//   kernel: exp
//   extends: relu
//   types: {T: float}
//
// Every problem — YAML syntax, an unknown key, a malformed pattern, a name that is never bound,
// an IPF that is not affine — is a tapestry::Error whose message is `file:line:col: error: ...`
// followed by the offending line and a caret. docs/metakernels.md is the language reference.
#pragma once

#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

#include "tapestry/metakernel/metakernel.h"
#include "tapestry/metakernel/source.h"

namespace tapestry::metakernel {

/// Finds an already loaded kernel by name (for `extends:`); returns null when there is none.
using KernelFinder = std::function<const Metakernel*(std::string_view name)>;

/// Parses every kernel in `file`. Throws Error with a located, caret-annotated message.
std::vector<Metakernel> parse_kernels(const SourceFilePtr& file, const KernelFinder& find = {});

/// Reads and parses a kernel file from disk.
std::vector<Metakernel> load_kernel_file(const std::filesystem::path& path,
                                         const KernelFinder& find = {});

/// The static checks run on every parsed kernel (exposed for tests): names bound before use,
/// patterns in the forms each section admits, one IPF per port, output IPFs free of reduction
/// dims, known hooks. Throws LocatedError.
void check_kernel(const Metakernel& kernel);

}  // namespace tapestry::metakernel
