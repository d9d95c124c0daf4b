// SPDX-License-Identifier: Apache-2.0
// The GPU filter's predicate code, on the CPU (the selection kernel runs the same function;
// onecopy-tests-gpu checks the kernel and the CUB compaction against this), against what a CPU
// scan keeps: the same comparison parsed, bound and run by format/expr_eval over a struct batch,
// nulls included (SQL's three-valued logic: a null row is never kept).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "format/column.hpp"
#include "format/expr.hpp"
#include "format/expr_bind.hpp"
#include "format/expr_eval.hpp"
#include "format/expr_parser.hpp"
#include "kernels/filter.hpp"

using namespace oc;
using format::CmpOp;
using kernels::CompareOp;
using kernels::Predicate;
using kernels::ValueKind;

namespace {

// The GPU filter's ops and the filter grammar's, pairwise: the one mapping a scan that pushes a
// comparison down to the GPU has to make.
constexpr std::pair<CompareOp, CmpOp> kOps[] = {
    {CompareOp::eq, CmpOp::eq}, {CompareOp::ne, CmpOp::ne}, {CompareOp::lt, CmpOp::lt},
    {CompareOp::le, CmpOp::le}, {CompareOp::gt, CmpOp::gt}, {CompareOp::ge, CmpOp::ge}};

template <class T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

template <class T>
ValueKind kind_of() {
  return std::is_floating_point_v<T> ? ValueKind::floating
         : std::is_signed_v<T>       ? ValueKind::signed_int
                                     : ValueKind::unsigned_int;
}

template <class T>
format::PType ptype_of() {
  using P = format::PType;
  if constexpr (std::is_same_v<T, float>)
    return P::f32;
  else if constexpr (std::is_same_v<T, double>)
    return P::f64;
  else if constexpr (std::is_signed_v<T>)
    return sizeof(T) == 1 ? P::i8 : sizeof(T) == 2 ? P::i16 : sizeof(T) == 4 ? P::i32 : P::i64;
  else
    return sizeof(T) == 1 ? P::u8 : sizeof(T) == 2 ? P::u16 : sizeof(T) == 4 ? P::u32 : P::u64;
}

// The Arrow bitmap of @p valid (bit i = row i); the bits past the last row are set, which the
// filter must ignore.
std::vector<uint8_t> bitmap_of(const std::vector<bool>& valid) {
  std::vector<uint8_t> bits((valid.size() + 7) / 8, 0xff);
  for (size_t i = 0; i < valid.size(); ++i) format::bitmap_set(bits.data(), i, valid[i]);
  return bits;
}

// struct{x: T} holding @p values, row i null where bit i of @p validity is 0 (empty: no nulls):
// the batch a scan would evaluate the filter over.
template <class T>
format::ColumnPtr batch_of(const std::vector<T>& values,
                           const std::vector<uint8_t>& validity = {}) {
  auto x = std::make_shared<format::Column>();
  x->dtype = format::DType::make_primitive(ptype_of<T>(), !validity.empty());
  x->length = values.size();
  if (!validity.empty()) {
    x->validity = format::Buffer::copy_of({validity.data(), validity.size()});
    for (uint64_t i = 0; i < x->length; ++i) x->null_count += x->is_valid(i) ? 0 : 1;
  }
  x->buffers.push_back(format::Buffer::copy_of(
      {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(T)}));
  auto s = std::make_shared<format::Column>();
  s->dtype = format::DType::make_struct({"x"}, {x->dtype}, false);
  s->length = values.size();
  s->children.push_back(x);
  return s;
}

// `x <op> literal` as the CPU scan runs it. SQL has no spelling for NaN, so that literal is
// built as the tree the parser would give; every other one goes through the parser.
template <class T>
std::vector<uint8_t> cpu_keep(CmpOp op, T literal, const format::ColumnPtr& batch) {
  format::Literal lit =
      std::is_floating_point_v<T> ? format::Literal::float64(static_cast<double>(literal))
      : std::is_signed_v<T>       ? format::Literal::int64(static_cast<int64_t>(literal))
                                  : format::Literal::uint64(static_cast<uint64_t>(literal));
  if (lit.kind == format::Literal::Kind::uint64 &&
      lit.u <= uint64_t(std::numeric_limits<int64_t>::max())) {
    lit = format::Literal::int64(
        static_cast<int64_t>(lit.u));  // what the parser makes of a small integer
  }
  format::ExprPtr e;
  std::string sql;
  if (std::isnan(lit.f)) {
    e = format::Expr::compare(op, format::Expr::column({"x"}, 0), format::Expr::lit(lit, 4), 2);
  } else {
    sql = "x " + std::string(format::cmp_op_name(op)) + " " + format::literal_to_string(lit);
    auto parsed = format::parse_expr(sql);
    REQUIRE(parsed.ok());
    e = *parsed;
  }
  INFO(format::to_string(*e));
  auto bound = format::bind(*e, *batch->dtype, sql);
  if (!bound.ok()) FAIL(bound.error().to_string());
  auto mask = format::evaluate(*bound, *batch);
  if (!mask.ok()) FAIL(mask.error().to_string());
  return mask->keep;
}

}  // namespace

TEMPLATE_TEST_CASE("select_on_host keeps the rows a CPU scan's filter keeps, for every op and type",
                   "[kernels][filter]", int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t,
                   uint32_t, uint64_t, float, double) {
  std::mt19937_64 rng(sizeof(TestType) * 7 + std::is_signed_v<TestType>);
  std::vector<TestType> values(5000);
  for (auto& v : values) {
    if constexpr (std::is_floating_point_v<TestType>) {
      v = static_cast<TestType>(static_cast<int>(rng() % 200) - 100) /
          8;  // exact in float and double
    } else {
      v = static_cast<TestType>(rng() % 64);  // small values: equal ones are common
      if constexpr (std::is_signed_v<TestType>) v = static_cast<TestType>(v - 32);
    }
  }
  // The extremes of the type: sign extension and unsigned width are where a predicate on raw
  // bits goes wrong.
  values[7] = std::numeric_limits<TestType>::max();
  values[8] = std::numeric_limits<TestType>::lowest();
  if constexpr (std::is_floating_point_v<TestType>) {
    values[0] = std::numeric_limits<TestType>::quiet_NaN();
    values[1] = TestType(-0.0);
    values[2] = TestType(0.0);
    values[3] = std::numeric_limits<TestType>::infinity();
    values[4] = -std::numeric_limits<TestType>::infinity();
  }
  std::vector<TestType> literals = {values[5], values[6], TestType(0),
                                    std::numeric_limits<TestType>::max(),
                                    std::numeric_limits<TestType>::lowest()};
  if constexpr (std::is_floating_point_v<TestType>) {
    literals.push_back(std::numeric_limits<TestType>::quiet_NaN());
    literals.push_back(TestType(-0.0));
  }
  // Once without nulls, once with about one row in three null (their values as above, so many
  // satisfy the predicate): neither filter keeps a null row.
  std::vector<bool> valid(values.size());
  for (size_t i = 0; i < valid.size(); ++i) valid[i] = rng() % 3 != 0;
  for (const std::vector<uint8_t>& validity : {std::vector<uint8_t>{}, bitmap_of(valid)}) {
    INFO((validity.empty() ? "no nulls" : "with nulls"));
    const auto batch = batch_of(values, validity);
    for (const auto& [gpu_op, cpu_op] : kOps) {
      for (TestType literal : literals) {
        INFO("x " << format::cmp_op_name(cpu_op) << " " << +literal);
        Predicate p{gpu_op, kind_of<TestType>(), static_cast<uint8_t>(sizeof(TestType)),
                    bits_of(literal)};
        auto mask = kernels::select_on_host(
            p, values.data(), validity.empty() ? nullptr : validity.data(), values.size());
        REQUIRE(mask.ok());
        const std::vector<uint8_t> want = cpu_keep(cpu_op, literal, batch);
        REQUIRE(want.size() == values.size());
        // One check per op and literal, naming the first row that differs: every disagreeing
        // case is reported, not only the first.
        size_t differ = 0, first = 0;
        for (size_t i = 0; i < values.size(); ++i) {
          if ((*mask)[i] != want[i] && differ++ == 0) first = i;
        }
        INFO(differ << " rows differ; first: row " << first << " value " << +values[first]
                    << (batch->children[0]->is_valid(first) ? "" : " (null)") << ", select_on_host "
                    << +(*mask)[first] << ", CPU scan " << +want[first]);
        CHECK(differ == 0);
      }
    }
  }
}

TEMPLATE_TEST_CASE(
    "select_on_host never selects a null row, for every op, whatever value the row holds",
    "[kernels][filter]", int8_t, int32_t, int64_t, uint8_t, uint16_t, uint64_t, float, double) {
  // Rows hold 9, 10, 11 in turn and every odd row is null, so the null rows hold all three and,
  // for each op against 10, some of them a value that satisfies it. Floats add NaN (for which
  // only `ne` holds) on a null row and on a valid one. 19 rows: the last bitmap byte is partial.
  constexpr size_t kRows = 19;
  std::vector<TestType> values(kRows);
  std::vector<bool> valid(kRows);
  for (size_t i = 0; i < kRows; ++i) {
    values[i] = static_cast<TestType>(9 + i % 3);
    valid[i] = i % 2 == 0;
  }
  if constexpr (std::is_floating_point_v<TestType>) {
    values[15] = std::numeric_limits<TestType>::quiet_NaN();
    values[16] = std::numeric_limits<TestType>::quiet_NaN();
  }
  const std::vector<uint8_t> validity = bitmap_of(valid);
  const auto batch = batch_of(values, validity);
  const auto literal = static_cast<TestType>(10);
  for (const auto& [gpu_op, cpu_op] : kOps) {
    INFO("x " << format::cmp_op_name(cpu_op) << " 10");
    const Predicate p{gpu_op, kind_of<TestType>(), static_cast<uint8_t>(sizeof(TestType)),
                      bits_of(literal)};
    auto holds = kernels::select_on_host(p, values.data(), nullptr, kRows);  // the values alone
    auto mask = kernels::select_on_host(p, values.data(), validity.data(), kRows);
    REQUIRE(holds.ok());
    REQUIRE(mask.ok());
    size_t null_rows_holding = 0;
    for (size_t i = 0; i < kRows; ++i) {
      INFO("row " << i << " value " << +values[i] << (valid[i] ? "" : " (null)"));
      if (!valid[i]) null_rows_holding += (*holds)[i];
      CHECK(+(*mask)[i] == (valid[i] ? +(*holds)[i] : 0));
    }
    CHECK(null_rows_holding > 0);  // a filter that ignored validity would select them
    CHECK(*mask == cpu_keep(cpu_op, literal, batch));
  }
}

TEST_CASE("select_on_host reads the validity bitmap LSB first, bit i for row i",
          "[kernels][filter]") {
  const std::vector<int32_t> values(21, 5);
  const Predicate p{CompareOp::ne, ValueKind::signed_int, 4,
                    bits_of(int32_t{6})};  // holds on every row
  auto unmasked = kernels::select_on_host(p, values.data(), nullptr, values.size());
  REQUIRE(unmasked.ok());
  CHECK(*unmasked == std::vector<uint8_t>(21, 1));
  const std::vector<uint8_t> all_valid(3, 0xff), all_null(3, 0x00);
  auto mask = kernels::select_on_host(p, values.data(), all_valid.data(), values.size());
  REQUIRE(mask.ok());
  CHECK(*mask == *unmasked);
  mask = kernels::select_on_host(p, values.data(), all_null.data(), values.size());
  REQUIRE(mask.ok());
  CHECK(*mask == std::vector<uint8_t>(21, 0));
  // kernels/filter_stages.hpp's example: 10 rows with row 3 null are F7 03.
  const std::vector<uint8_t> row3_null = {0xf7, 0x03};
  mask = kernels::select_on_host(p, values.data(), row3_null.data(), 10);
  REQUIRE(mask.ok());
  CHECK(*mask == std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 1, 1, 1});
}

TEST_CASE("select_on_host refuses widths it has no filter for", "[kernels][filter]") {
  CHECK(kernels::select_on_host({CompareOp::eq, ValueKind::floating, 2, 0}, nullptr, nullptr, 0)
            .error()
            .code() == Errc::invalid);
  CHECK(kernels::select_on_host({CompareOp::eq, ValueKind::signed_int, 16, 0}, nullptr, nullptr, 0)
            .error()
            .code() == Errc::invalid);
}
