// SPDX-License-Identifier: Apache-2.0
// Golden bytes: tests/fuzz/seeds/open_scan/tiny.vortex, written by vortex-data 0.93
// (tests/fuzz/make_seeds.py), pins how onecopy reads the postscript and footer FlatBuffers.
#include <catch2/catch.hpp>

#include "format/array_tree.hpp"
#include "format/footer.hpp"
#include "format/scalar.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/seed_files.hpp"

using namespace oc;
using namespace oc::test;

TEST_CASE("the footer of a vortex-data file parses field by field", "[format][footer]") {
  const auto bytes = read_seed("tiny.vortex");
  REQUIRE(bytes.size() == 2296);
  auto src = format::memory_source(Buffer::copy_of(bytes));
  auto f = format::read_footer(*src);
  REQUIRE(f.ok());
  CHECK(f->file_size == 2296);
  CHECK(f->reads_to_open == 1);
  CHECK(f->dtype->to_string() == "struct{x=i8?}");

  // Segment map: (offset, length, alignment) from the 16-byte SegmentSpec structs.
  REQUIRE(f->segments.size() == 2);
  CHECK(f->segments[0].offset == 8);
  CHECK(f->segments[0].length == 120);
  CHECK(f->segments[0].alignment_exponent == 3);
  CHECK(f->segments[1].offset == 128);
  CHECK(f->segments[1].length == 296);

  // Layout tree, with IDs resolved through layout_specs.
  const auto& root = *f->layout;
  CHECK(root.encoding == "vortex.struct");
  CHECK(root.row_count == 3);
  REQUIRE(root.children.size() == 1);
  const auto& zoned = *root.children[0];
  CHECK(zoned.encoding == "vortex.zoned");
  REQUIRE(zoned.children.size() == 2);
  CHECK(zoned.children[0]->encoding == "vortex.flat");
  CHECK(zoned.children[0]->segments == std::vector<uint32_t>{0});
  CHECK(zoned.children[1]->row_count == 1);  // one zone
  CHECK(zoned.metadata.at(0) == 1);          // zoned metadata version byte

  // array_specs is the writer's whole registry, not only the encodings used.
  CHECK(std::find(f->array_specs.begin(), f->array_specs.end(), "vortex.sequence") !=
        f->array_specs.end());
  CHECK(f->array_specs.size() > 20);

  // File statistics: min and max are protobuf ScalarValues.
  REQUIRE(f->field_stats.size() == 1);
  CHECK(f->field_stats[0].null_count == std::optional<uint64_t>(0));
  auto min = format::parse_scalar(f->field_stats[0].min);
  auto max = format::parse_scalar(f->field_stats[0].max);
  REQUIRE(min.ok());
  REQUIRE(max.ok());
  CHECK(*format::scalar_to_bits(*min, PType::i8) == 1);
  CHECK(*format::scalar_to_bits(*max, PType::i8) == 3);

  // The data segment holds a sequence array (1, 2, 3): base 1, multiplier 1.
  auto seg = src->read(std::vector<format::ByteRange>{f->segments[0].range()});
  REQUIRE(seg.ok());
  auto tree = format::parse_array_tree((*seg)[0], f->array_specs);
  REQUIRE(tree.ok());
  CHECK(tree->encoding == "vortex.sequence");
  auto col = decode(*tree, f->dtype->children[0], 3);
  REQUIRE(col.ok());
  CHECK(values_of<int8_t>(**col) == std::vector<int8_t>{1, 2, 3});
}
