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

}  // namespace oc
