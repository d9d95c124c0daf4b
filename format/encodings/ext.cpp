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

Result<ColumnPtr> decode_ext(const ArrayView& node, const DTypePtr& t, uint64_t len,
                             DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 1, 1));
  OC_EXPECT(t->kind == TypeKind::extension, corrupt, "vortex.ext for {}", t->to_string());
  OC_EXPECT(node.metadata.empty(), corrupt, "vortex.ext metadata is {} bytes, expected none",
            node.metadata.size());
  OC_ASSIGN_OR_RETURN(auto storage, ctx.decode(node.children[0], t->children[0], len));
  auto c = std::make_shared<Column>(*storage);
  c->dtype = t;
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_ext() { register_encoding("vortex.ext", decode_ext, /*window_aware=*/true); }

}  // namespace oc::format::encodings
