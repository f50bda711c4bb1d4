// The built-in constraints, one factory per constraint (each defined in its own file under
// src/ir/constraints/). The returned name is the issue type it reports. The dialects in
// dialect.h are lists of these; a new dialect (e.g. `placement`) picks from them and adds its own.
//
//   name                           what it demands
//   node-type                      every node's type is admitted by the dialect
//   tag-type                       every tag's type is admitted and sits on a node kind that takes
//   it body-schema                    node bodies match their type's schema tag-schema tag values
//   match their type's schema body-extension-field           (warning) body fields outside the
//   schema, kept but flagged tensor-dtype                   tensor dtypes are known to the dialect
//   node-reference                 tensorId / operationId name nodes of the right kind
//   selection-range                selections have their tensor's rank and lie inside its range
//   operation-acyclic              the tensor/operation graph has no cycle
//   tensor-single-producer         at most one operation writes each tensor
//   operation-ipf-present          operations carry IPFIndex and IPFSignature (warning if neither)
//   operation-index-names          index names / reductions are consistent with the index rank
//   operation-ipf-agreement        operation selections equal IPF(index), port by port
//   operation-reduction            reduction dims map to zero columns of every output IPF
//   operation-output-injective     output IPFs are injective over the non-reduction dims
//   application-index-partition    applications' index boxes exactly partition the op index
//   application-ipf-agreement      application selections equal IPF(sub-box)
//   application-output-coverage    each operation output is covered exactly once by its shards
#pragma once

#include <memory>

#include "tapestry/ir/constraint.h"

namespace tapestry::ir::constraints {

std::shared_ptr<const Constraint> node_type();
std::shared_ptr<const Constraint> tag_type();
std::shared_ptr<const Constraint> body_schema();
std::shared_ptr<const Constraint> tag_schema();
std::shared_ptr<const Constraint> body_extension_field();
std::shared_ptr<const Constraint> tensor_dtype();
std::shared_ptr<const Constraint> node_reference();
std::shared_ptr<const Constraint> selection_range();
std::shared_ptr<const Constraint> operation_acyclic();
std::shared_ptr<const Constraint> tensor_single_producer();
std::shared_ptr<const Constraint> operation_ipf_present();
std::shared_ptr<const Constraint> operation_index_names();
std::shared_ptr<const Constraint> operation_ipf_agreement();
std::shared_ptr<const Constraint> operation_reduction();
std::shared_ptr<const Constraint> operation_output_injective();
std::shared_ptr<const Constraint> application_index_partition();
std::shared_ptr<const Constraint> application_ipf_agreement();
std::shared_ptr<const Constraint> application_output_coverage();
/// The placement dialect's: devices named, cross-device reads received (application_placement.cpp).
std::shared_ptr<const Constraint> application_placement();

}  // namespace tapestry::ir::constraints
