// Typed views over graph nodes.
#include <algorithm>

#include "tapestry/ir/graph.h"
#include "tapestry/support/assert.h"

namespace tapestry::ir {

namespace {
const std::string kEmptyString;
const nlohmann::json kNullJson;
}  // namespace

NodeKind NodeView::kind() const {
  return graph_->kind(id_);
}

std::string_view NodeView::key() const {
  return graph_->key(id_);
}

const std::string& NodeView::label() const {
  const auto* extra = graph_->find_extra(id_);
  return extra ? extra->label : kEmptyString;
}

std::string_view NodeView::display_name() const {
  const std::string& l = label();
  return l.empty() ? key() : std::string_view(l);
}

std::string_view NodeView::type() const {
  NodeKind k = kind();
  if (k == NodeKind::kOpaque) return graph_->opaque(id_).type;
  return node_type_url(k);
}

const nlohmann::json& NodeView::extensions() const {
  const auto* extra = graph_->find_extra(id_);
  return extra ? extra->extensions : kNullJson;
}

std::optional<zspace::Range> NodeView::ipf_index() const {
  const auto& r = graph_->record(id_);
  if (r.index_at == Graph::kNone) return std::nullopt;
  const std::span<const std::int64_t> corners = graph_->index_corners(r);
  const std::size_t rank = corners.size() / 2;
  return zspace::Range(zspace::Point(corners.first(rank)), zspace::Point(corners.last(rank)));
}

std::optional<NodeView::IndexCorners> NodeView::ipf_index_corners() const {
  const auto& r = graph_->record(id_);
  if (r.index_at == Graph::kNone) return std::nullopt;
  const std::span<const std::int64_t> corners = graph_->index_corners(r);
  const std::size_t rank = corners.size() / 2;
  return IndexCorners{corners.first(rank), corners.last(rank)};
}

bool NodeView::has_ipf_index() const {
  return graph_->record(id_).index_at != Graph::kNone;
}

const IpfSignature* NodeView::ipf_signature() const {
  const auto& r = graph_->record(id_);
  return r.signature_slot == Graph::kNone ? nullptr : &graph_->signatures_[r.signature_slot];
}

bool NodeView::has_io_sequence_point() const {
  return graph_->record(id_).io_sequence_point;
}

const nlohmann::json& NodeView::other_tags() const {
  const auto* extra = graph_->find_extra(id_);
  return extra ? extra->other_tags : kNullJson;
}

const TensorBody& TensorView::body() const {
  const auto& r = graph_->record(id_);
  TAPESTRY_ASSERT(r.kind == NodeKind::kTensor, "not a tensor");
  return graph_->tensor_bodies_[r.slot];
}

const OperationBody& OperationView::body() const {
  const auto& r = graph_->record(id_);
  TAPESTRY_ASSERT(r.kind == NodeKind::kOperation, "not an operation");
  return graph_->operation_bodies_[r.slot];
}

std::size_t OperationView::index_rank() const {
  const auto& r = graph_->record(id_);
  if (r.index_at != Graph::kNone) return graph_->index_corners(r).size() / 2;
  return body().index_names.size();
}

std::string OperationView::index_name(std::size_t dim) const {
  const auto& names = body().index_names;
  return dim < names.size() ? names[dim] : default_index_name(dim);
}

std::vector<std::string> OperationView::index_names() const {
  std::vector<std::string> names;
  for (std::size_t d = 0; d < index_rank(); ++d) names.push_back(index_name(d));
  return names;
}

std::optional<std::size_t> OperationView::index_dim(std::string_view name) const {
  for (std::size_t d = 0; d < index_rank(); ++d) {
    if (index_name(d) == name) return d;
  }
  return std::nullopt;
}

std::optional<Monoid> OperationView::reduction(std::size_t dim) const {
  const auto& reductions = body().reductions;
  if (reductions.empty()) return std::nullopt;
  std::string name = index_name(dim);
  for (const Reduction& r : reductions) {
    if (r.dim == name) return r.monoid;
  }
  return std::nullopt;
}

std::span<const ApplicationId> OperationView::applications() const {
  return graph_->applications_of(operation_id());
}

const ApplicationBody& ApplicationView::body() const {
  const auto& r = graph_->record(id_);
  TAPESTRY_ASSERT(r.kind == NodeKind::kApplication, "not an application");
  return graph_->application_bodies_[r.slot];
}

const std::string& NoteView::message() const {
  const auto& r = graph_->record(id_);
  TAPESTRY_ASSERT(r.kind == NodeKind::kNote, "not a note");
  return graph_->note_bodies_[r.slot].message;
}

}  // namespace tapestry::ir
