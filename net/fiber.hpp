// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A stackful coroutine: one request's straight-line code, suspended at each ring wait.
///
/// A reactor thread runs many fibers; a fiber gives the thread back (`suspend`) whenever it
/// waits for a completion, a timer or another thread, and its reactor `resume`s it later. The
/// HTTP, TLS and S3 code above the ring stays sequential (OpenSSL's BIO callbacks included) while
/// hundreds of requests share a few threads. Stacks are anonymous `MAP_NORESERVE` mappings with a
/// guard page below them, so an overflow faults instead of overwriting a neighbour, and only the
/// pages a request touches are ever resident.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "config/error.hpp"

namespace oc::net {

class Fiber {
 public:
  /// A fiber that will run @p body on a stack of @p stack_bytes (rounded up to pages) once
  /// resumed. @p body is moved from only on success. Whatever escapes it is logged and swallowed.
  [[nodiscard]] static Result<std::unique_ptr<Fiber>> create(std::function<void()>&& body,
                                                             size_t stack_bytes);
  ~Fiber();  ///< only a fiber that has finished, or never started, may be destroyed
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  /// Runs the fiber on the calling thread until it suspends or finishes.
  void resume();
  /// From inside the fiber: returns control to the `resume` that ran it.
  void suspend();

  [[nodiscard]] bool finished() const noexcept;
  /// @return the fiber the calling thread is running, or null outside any fiber.
  [[nodiscard]] static Fiber* current() noexcept;

 private:
  Fiber();
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace oc::net
