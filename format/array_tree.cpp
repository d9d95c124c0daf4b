// SPDX-License-Identifier: Apache-2.0
#include "format/array_tree.hpp"

#include "config/defaults.hpp"
#include "format/fbs/vortex_file_generated.h"
#include "format/flatbuffer_util.hpp"

namespace oc::format {
namespace {

Result<void> build_node(const fb::ArrayNode* node, const std::vector<Buffer>& buffers,
                        std::span<const std::string> specs, uint32_t depth, ArrayView& out) {
  OC_EXPECT(node != nullptr, corrupt, "missing array node");
  OC_EXPECT(depth < defaults().max_array_depth, corrupt, "array tree deeper than {}", depth);
  OC_EXPECT(node->encoding() < specs.size(), corrupt, "array encoding index {} past {} specs",
            node->encoding(), specs.size());
  out.encoding = specs[node->encoding()];
  if (node->metadata()) out.metadata.assign(node->metadata()->begin(), node->metadata()->end());
  if (node->buffers()) {
    for (uint16_t b : *node->buffers()) {
      OC_EXPECT(b < buffers.size(), corrupt, "buffer index {} past {} buffers", b, buffers.size());
      out.buffers.push_back(buffers[b]);
    }
  }
  out.stats = stats_from_flatbuffer(node->stats());
  if (node->children()) {
    out.children.resize(node->children()->size());
    for (flatbuffers::uoffset_t i = 0; i < node->children()->size(); ++i) {
      OC_TRY(build_node(node->children()->Get(i), buffers, specs, depth + 1, out.children[i]));
    }
  }
  return {};
}

}  // namespace

ArrayStatsView stats_from_flatbuffer(const fb::ArrayStats* st) {
  ArrayStatsView out;
  if (st == nullptr) return out;
  if (st->null_count()) out.null_count = *st->null_count();
  if (st->is_constant()) out.is_constant = *st->is_constant();
  if (st->is_sorted()) out.is_sorted = *st->is_sorted();
  if (st->min()) out.min.assign(st->min()->begin(), st->min()->end());
  if (st->max()) out.max.assign(st->max()->begin(), st->max()->end());
  out.min_exact = st->min_precision() == fb::StatPrecision::Exact;
  out.max_exact = st->max_precision() == fb::StatPrecision::Exact;
  return out;
}

Result<ArrayView> parse_array_tree(const Buffer& segment,
                                   std::span<const std::string> array_specs) {
  const size_t n = segment.size();
  OC_EXPECT(n >= 4, corrupt, "flat segment of {} bytes has no array footer", n);
  const uint32_t fb_len = load_le<uint32_t>(segment.data() + n - 4);
  OC_EXPECT(fb_len <= n - 4, corrupt, "array flatbuffer length {} exceeds segment of {} bytes",
            fb_len, n);
  const size_t fb_start = n - 4 - fb_len;
  const AlignedBytes fb_bytes(segment.span().subspan(fb_start, fb_len));
  OC_ASSIGN_OR_RETURN(const fb::ArrayTree* tree,
                      verified_root<fb::ArrayTree>(fb_bytes.span(), "array"));

  std::vector<Buffer> buffers;
  size_t pos = 0;
  if (tree->buffers()) {
    // The verifier checks the vector's length field, not that its structs are aligned.
    OC_EXPECT(reinterpret_cast<uintptr_t>(tree->buffers()->Data()) % alignof(fb::BufferDesc) == 0,
              corrupt, "misaligned buffer table in an array");
    buffers.reserve(tree->buffers()->size());
    for (const fb::BufferDesc* d : *tree->buffers()) {
      OC_EXPECT(d->compression() == fb::BufferCompression::None, unsupported,
                "compressed array buffers (scheme {}) are not supported",
                static_cast<int>(d->compression()));
      const size_t start = pos + d->padding();
      OC_EXPECT(start <= fb_start && d->length() <= fb_start - start, corrupt,
                "array buffer [{}, +{}) runs past the data region of {} bytes", start, d->length(),
                fb_start);
      buffers.push_back(segment.slice(start, d->length()));
      pos = start + d->length();
    }
  }
  ArrayView root;
  OC_TRY(build_node(tree->root(), buffers, array_specs, 0, root));
  return root;
}

}  // namespace oc::format
