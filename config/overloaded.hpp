// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `Overloaded{f, g, ...}`: one callable of several lambdas, for std::visit over a
/// variant, each lambda taking one alternative.
#pragma once

namespace oc {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
// Clang before 17 does not deduce aggregate template arguments (P1816) by itself.
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace oc
