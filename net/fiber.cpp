// SPDX-License-Identifier: Apache-2.0
#include "net/fiber.hpp"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <exception>

#include "config/log.hpp"

// AddressSanitizer tracks one stack per thread; every switch between stacks has to be announced,
// or it reports the other stack's frames as overflows (compiler-rt's common_interface_defs.h).
#if defined(__SANITIZE_ADDRESS__)
#define OC_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OC_FIBER_ASAN 1
#endif
#endif
#ifdef OC_FIBER_ASAN
extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     size_t* size_old);
}
#endif

namespace oc::net {

namespace {
thread_local Fiber* t_current = nullptr;
}  // namespace

struct Fiber::State {
  std::function<void()> body;
  ucontext_t self{};
  ucontext_t caller{};
  void* mapping = nullptr;  // guard page, then the stack
  size_t mapping_bytes = 0;
  size_t guard_bytes = 0;
  bool started = false;
  bool finished = false;
  // The resumer's stack, as AddressSanitizer needs to hear of it when the fiber switches back.
  const void* caller_bottom = nullptr;
  size_t caller_size = 0;
  void* fake_stack = nullptr;

  std::byte* stack() const { return static_cast<std::byte*>(mapping) + guard_bytes; }
  size_t stack_bytes() const { return mapping_bytes - guard_bytes; }

  // makecontext passes int arguments only: the State pointer travels in two halves.
  static void entry(unsigned hi, unsigned lo) {
    auto* s = reinterpret_cast<State*>((static_cast<uintptr_t>(hi) << 32) | lo);
#ifdef OC_FIBER_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &s->caller_bottom, &s->caller_size);
#endif
    try {
      s->body();
    } catch (const std::exception& e) {
      log::get().error("net: a fiber's body threw: {}", e.what());
    } catch (...) {
      log::get().error("net: a fiber's body threw a non-standard exception");
    }
    s->body = nullptr;  // release what it captured on the fiber's own thread, now
    s->finished = true;
#ifdef OC_FIBER_ASAN
    // A null save slot tells ASan this stack is done, so its fake frames are released.
    __sanitizer_start_switch_fiber(nullptr, s->caller_bottom, s->caller_size);
#endif
    // Returning would follow uc_link; switching explicitly keeps one exit path.
    setcontext(&s->caller);
  }
};

Fiber::Fiber() : state_(std::make_unique<State>()) {}

Fiber::~Fiber() {
  if (state_->mapping) ::munmap(state_->mapping, state_->mapping_bytes);
}

Result<std::unique_ptr<Fiber>> Fiber::create(std::function<void()>&& body, size_t stack_bytes) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t stack = (stack_bytes + page - 1) / page * page;
  OC_EXPECT(stack >= 4 * page, invalid, "fiber stack of {} bytes is too small", stack_bytes);
  std::unique_ptr<Fiber> f(new Fiber());
  State& s = *f->state_;
  s.guard_bytes = page;
  s.mapping_bytes = stack + page;
  void* m = ::mmap(nullptr, s.mapping_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) return errno_error(errno, "mmap of a fiber stack", __FILE__, __LINE__);
  s.mapping = m;
  if (::mprotect(m, page, PROT_NONE) != 0) {
    return errno_error(errno, "mprotect of a fiber's guard page", __FILE__, __LINE__);
  }
  s.body = std::move(body);
  if (getcontext(&s.self) != 0) return errno_error(errno, "getcontext", __FILE__, __LINE__);
  s.self.uc_stack.ss_sp = s.stack();
  s.self.uc_stack.ss_size = s.stack_bytes();
  s.self.uc_link = nullptr;
  const auto bits = reinterpret_cast<uintptr_t>(&s);
  makecontext(&s.self, reinterpret_cast<void (*)()>(&State::entry), 2,
              static_cast<unsigned>(bits >> 32), static_cast<unsigned>(bits & 0xffffffffu));
  return f;
}

void Fiber::resume() {
  State& s = *state_;
  if (s.finished) return;
  Fiber* outer = t_current;
  t_current = this;
  s.started = true;
#ifdef OC_FIBER_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, s.stack(), s.stack_bytes());
#endif
  swapcontext(&s.caller, &s.self);
#ifdef OC_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  t_current = outer;
}

void Fiber::suspend() {
  State& s = *state_;
#ifdef OC_FIBER_ASAN
  __sanitizer_start_switch_fiber(&s.fake_stack, s.caller_bottom, s.caller_size);
#endif
  swapcontext(&s.self, &s.caller);
#ifdef OC_FIBER_ASAN
  __sanitizer_finish_switch_fiber(s.fake_stack, &s.caller_bottom, &s.caller_size);
#endif
}

bool Fiber::finished() const noexcept { return state_->finished; }

Fiber* Fiber::current() noexcept { return t_current; }

}  // namespace oc::net
