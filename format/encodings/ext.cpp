// SPDX-License-Identifier: Apache-2.0
// vortex.ext: an extension-typed array (dates, times, timestamps, ...) wrapping its storage.
//
// - buffers:  none.
// - metadata: empty.
// - children: [storage: the extension's storage dtype, len rows].
// The Arrow form of an extension column is its storage column (temporal types keep their
// integer storage), so the child is decoded and relabelled with the extension dtype.
#include "format/decode.hpp"
#include "format/encodings/registry.hpp"

namespace oc::format::encodings {
namespace {

Result<void> check_ext(const ArrayView& node, const DTypePtr& t) {
  OC_TRY(expect_shape(node, 0, 1, 1));
  OC_EXPECT(t->kind == TypeKind::extension, corrupt, "vortex.ext for {}", t->to_string());
  OC_EXPECT(node.metadata.empty(), corrupt, "vortex.ext metadata is {} bytes, expected none",
            node.metadata.size());
  return {};
}

ColumnPtr relabel(const ColumnPtr& storage, const DTypePtr& t) {
  auto c = std::make_shared<Column>(*storage);
  c->dtype = t;
  return c;
}

Result<ColumnPtr> decode_ext(const ArrayView& node, const DTypePtr& t, uint64_t len,
                             DecodeContext& ctx) {
  OC_TRY(check_ext(node, t));
  OC_ASSIGN_OR_RETURN(auto storage, ctx.decode(node.children[0], t->children[0], len));
  return relabel(storage, t);
}

Result<ColumnPtr> take_ext(const ArrayView& node, const DTypePtr& t, uint64_t len,
                           std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_TRY(check_ext(node, t));
  OC_ASSIGN_OR_RETURN(auto storage, ctx.decode_take(node.children[0], t->children[0], len, rows));
  return relabel(storage, t);
}

}  // namespace

void register_ext() {
  register_encoding("vortex.ext", decode_ext, /*window_aware=*/true);
  register_take("vortex.ext", take_ext);
}

}  // namespace oc::format::encodings
