// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `Result<T>` and `Error`: how every function below the API edge reports failure.
///
/// A small C++20 stand-in for `std::expected<T, Error>`. An `Error` carries a closed error code,
/// the errno where a syscall failed, a message, the source location where it was raised and a
/// chain of context strings added by callers on the way up. Nothing below the client API edge
/// throws; `main()` and the client library turn an `Error` into an exit code or an exception.
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace oc {

/// The closed set of failure classes. Callers branch on these, never on message text.
enum class Errc : uint8_t {
  io,           ///< a read, write or syscall failed (errno set)
  timeout,      ///< a deadline passed
  protocol,     ///< a peer broke a wire protocol (HTTP, TLS, daemon socket)
  corrupt,      ///< stored bytes are malformed: truncated files, bad lengths, bad FlatBuffers
  invalid,      ///< the caller passed something unusable: bad option, bad expression, bad index
  unsupported,  ///< valid input that onecopy does not implement (an unknown encoding, say)
  cuda,         ///< a CUDA call failed, or no device where one was required
  not_found,    ///< a named thing is missing: file, column, object
  out_of_memory,
  cancelled,
  denied,  ///< the caller may not have this (a path, object or host it is not granted)
};

/// The last `Errc`, for code that walks them all.
inline constexpr Errc kLastErrc = Errc::denied;

/// @return whether error texts carry the source position where they were raised: true when the
///         environment variable ONECOPY_DEBUG is "1" at the first call (read once per process).
///         Users see errors without positions; developers set ONECOPY_DEBUG=1 to find the origin.
[[nodiscard]] bool debug_positions() noexcept;

/// @return the stable lower-case name of @p code ("corrupt", "io", ...).
[[nodiscard]] std::string_view errc_name(Errc code) noexcept;

/// @return the code named @p name by `errc_name`, or nullopt when none is.
[[nodiscard]] std::optional<Errc> errc_from_name(std::string_view name) noexcept;

/// A failure: code, errno (0 when none), message, origin and a context chain.
class Error {
 public:
  Error(Errc code, std::string message, const char* file = nullptr, int line = 0, int sys_errno = 0)
      : code_(code), errno_(sys_errno), message_(std::move(message)), file_(file), line_(line) {}

  [[nodiscard]] Errc code() const noexcept { return code_; }
  [[nodiscard]] int sys_errno() const noexcept { return errno_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

  /// Adds an outer context line ("while reading segment 7"); returns *this for chaining.
  Error& with_context(std::string context) & {
    context_.push_back(std::move(context));
    return *this;
  }
  Error&& with_context(std::string context) && {
    context_.push_back(std::move(context));
    return std::move(*this);
  }

  /// @return "corrupt: <message> (<strerror>) [while ...]", outermost context last, followed by
  ///         " [at file:line]" only when `debug_positions()` holds (ONECOPY_DEBUG=1).
  [[nodiscard]] std::string to_string() const;
  /// @return `to_string()` never with the source position: what may be shown to another party
  ///         (onecopyd's clients), who has no use for where in onecopy the error was raised.
  [[nodiscard]] std::string describe() const;
  /// @return `describe()` always followed by " [at file:line]" when the origin is known.
  [[nodiscard]] std::string located() const;

 private:
  Errc code_;
  int errno_;
  std::string message_;
  const char* file_;
  int line_;
  std::vector<std::string> context_;
};

/// Either a value or an `Error`. Check `ok()` before `value()`; `value()` on an error is a bug.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  Error& error() & { return std::get<1>(v_); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

/// `Result<void>`: success, or an `Error`.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), has_error_(true) {}  // NOLINT

  [[nodiscard]] bool ok() const noexcept { return !has_error_; }
  explicit operator bool() const noexcept { return ok(); }
  Error& error() & { return err_; }
  const Error& error() const& { return err_; }
  Error&& error() && { return std::move(err_); }

 private:
  Error err_{Errc::invalid, {}};
  bool has_error_ = false;
};

/// Builds an `Error` that records where it was raised; the message is formatted with fmt.
template <class... Args>
[[nodiscard]] Error make_error(Errc code, const char* file, int line, fmt::format_string<Args...> f,
                               Args&&... args) {
  return Error(code, fmt::format(f, std::forward<Args>(args)...), file, line);
}

/// Builds an `Errc::io` error from a negative errno as returned by liburing and raw syscalls.
[[nodiscard]] Error errno_error(int negative_errno, std::string what, const char* file, int line);

/// @return the error an exception caught by `catch (...)` stands for: `out_of_memory` for
///         `std::bad_alloc`, else `invalid` with the exception's text, in @p where.
/// @note For the places where exceptions must stop (the C API edge, a worker thread, an event
///       loop); call it from inside a catch block only.
[[nodiscard]] Error current_exception_error(std::string_view where);

/// Runs @p f, which returns a `Result`, and turns any exception it throws into that result's
/// error (`current_exception_error(where)`): a `Result` whatever happens.
template <class F>
auto catch_all(std::string_view where, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    return current_exception_error(where);
  }
}

}  // namespace oc

#define OC_CONCAT_INNER(a, b) a##b
#define OC_CONCAT(a, b) OC_CONCAT_INNER(a, b)

/// Returns a new error of code @p code from the current function.
#define OC_ERROR(code, ...) ::oc::make_error((code), __FILE__, __LINE__, __VA_ARGS__)

/// Returns `Errc::<code>` with a formatted message unless @p cond holds. The message is only
/// formatted on failure.
#define OC_EXPECT(cond, code, ...)                    \
  do {                                                \
    if (!(cond)) [[unlikely]] {                       \
      return OC_ERROR(::oc::Errc::code, __VA_ARGS__); \
    }                                                 \
  } while (0)

/// Propagates the error of a `Result` expression; discards its value.
#define OC_TRY(expr)                            \
  do {                                          \
    auto&& oc_try_result_ = (expr);             \
    if (!oc_try_result_.ok()) [[unlikely]] {    \
      return std::move(oc_try_result_).error(); \
    }                                           \
  } while (0)

#define OC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) [[unlikely]] {                  \
    return std::move(tmp).error();               \
  }                                              \
  lhs = std::move(tmp).value()

/// `OC_ASSIGN_OR_RETURN(auto x, f());` binds the value of `f()` or returns its error.
#define OC_ASSIGN_OR_RETURN(lhs, expr) \
  OC_ASSIGN_OR_RETURN_IMPL(OC_CONCAT(oc_result_, __LINE__), lhs, expr)
