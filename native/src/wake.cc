// WakeListener: an eventfd watched by the event loop itself (a libuv poll handle), so a stub
// that has published on ring B wakes Node's loop with one write(2) and no thread in between.
//
// Before this, a native thread slept on ring B's futex and forwarded each change to the loop
// through a thread-safe function: every answer cost two wake-ups (stub -> thread -> loop), and
// on a small or virtualised host a wake-up of a sleeping thread is among the most expensive
// things a request does. The stub writes the eventfd only when Node has asked for it (ring B's
// `sleeping` word, see docs/ipc.md), and the loop asks only when it is about to block: a libuv
// prepare handle, which runs just before the loop polls, sets the word and looks at ring B once
// more. An answer that arrives while the loop is busy (reading sockets, writing answers) is
// picked up there, before the loop would sleep, with no system call on either side.
//
// With a spin budget (spin-mode=always, or adaptive when cores are idle; wait_core.h), the loop
// keeps polling without blocking for that long after each wake-up (a libuv idle handle makes
// epoll_wait return at once): the next answer then finds the loop's core awake, which on a
// virtualised host saves the wake-up of a halted vCPU on every round trip.
#include "wake.h"

#include <sys/eventfd.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "layout.h"
#include "v8_interop.h"
#include "wait_core.h"

namespace tritium {
namespace {

class WakeListener : public Napi::ObjectWrap<WakeListener> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "WakeListener",
                       {InstanceAccessor<&WakeListener::Fd>("fd"), InstanceMethod("close", &WakeListener::Close),
                        InstanceMethod("ref", &WakeListener::Ref), InstanceMethod("unref", &WakeListener::Unref)});
  }

  // new WakeListener(callback, n0, opts?): creates the eventfd (close-on-exec, non-blocking)
  // and starts watching it; `callback` runs on the loop, with no arguments, when the stub wrote
  // the eventfd and when ring B of `n0` (the channel's first segment, a SharedArrayBuffer) holds
  // messages the stub published without writing it.
  //   opts: { spinUs?: number = 50, spinMode?: 'adaptive'|'always'|'never' = 'adaptive' }
  explicit WakeListener(const Napi::CallbackInfo& info)
      : Napi::ObjectWrap<WakeListener>(info), async_(info.Env(), "tritium.wake") {
    Napi::Env env = info.Env();
    // The backing store keeps the segment mapped while the listener reads its words.
    n0_ = info.Length() < 2 ? nullptr : SabStore(info[1]);
    if (info.Length() < 2 || !info[0].IsFunction() || !n0_) {
      Napi::TypeError::New(env, "new WakeListener(callback: () => void, n0: SharedArrayBuffer, opts?)").ThrowAsJavaScriptException();
      return;
    }
    if (n0_->ByteLength() < ring::kHeaderSize) {
      Napi::RangeError::New(env, "WakeListener: n0 is smaller than the segment header").ThrowAsJavaScriptException();
      return;
    }
    base_ = static_cast<uint8_t*>(n0_->Data());
    double spin_us = 50;
    wait::SpinMode mode = wait::SpinMode::kAdaptive;
    if (info.Length() > 2 && info[2].IsObject()) {
      Napi::Object o = info[2].As<Napi::Object>();
      if (o.Get("spinUs").IsNumber()) spin_us = o.Get("spinUs").As<Napi::Number>().DoubleValue();
      if (o.Get("spinMode").IsString()) {
        std::string m = o.Get("spinMode").As<Napi::String>().Utf8Value();
        if (!wait::ParseSpinMode(m.c_str(), &mode)) {
          Napi::RangeError::New(env, "WakeListener: spinMode must be 'adaptive', 'always' or 'never'").ThrowAsJavaScriptException();
          return;
        }
      }
    }
    if (!(spin_us >= 0) || spin_us > 1e6) {
      Napi::RangeError::New(env, "WakeListener: spinUs must be between 0 and 1000000").ThrowAsJavaScriptException();
      return;
    }
    policy_.Configure(mode, static_cast<int64_t>(spin_us * 1000));
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) {
      Napi::Error::New(env, "WakeListener: no event loop").ThrowAsJavaScriptException();
      return;
    }
    fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd_ < 0) {
      ThrowErrno(env, "eventfd");
      return;
    }
    poll_ = new uv_poll_t;
    int r = uv_poll_init(loop, poll_, fd_);
    if (r != 0) {
      delete poll_;  // never registered with the loop
    } else if ((r = uv_poll_start(poll_, UV_READABLE, OnReadable)) != 0) {
      poll_->data = nullptr;
      uv_close(reinterpret_cast<uv_handle_t*>(poll_), OnClosed);
    }
    if (r != 0) {
      poll_ = nullptr;
      ::close(fd_);
      fd_ = -1;
      Napi::Error::New(env, std::string("WakeListener: uv_poll: ") + uv_strerror(r)).ThrowAsJavaScriptException();
      return;
    }
    poll_->data = this;
    // Unreferenced: the poll handle alone decides whether the listener keeps the loop alive.
    prepare_ = new uv_prepare_t;
    uv_prepare_init(loop, prepare_);
    prepare_->data = this;
    uv_prepare_start(prepare_, OnPrepare);
    uv_unref(reinterpret_cast<uv_handle_t*>(prepare_));
    if (policy_.mode() != wait::SpinMode::kNever) {
      idle_ = new uv_idle_t;
      uv_idle_init(loop, idle_);
      idle_->data = this;
    }
    env_ = env;
    callback_ = Napi::Persistent(info[0].As<Napi::Function>());
    // The handle holds the object alive until close(): a listener nobody references any more
    // must still not be collected while the loop can call into it.
    self_ = Napi::Persistent(info.This().As<Napi::Object>());
    // Ask for the first wake-up (the stub's `hello`).
    wait::StoreU32(Sleeping(), 1);
  }

  ~WakeListener() override { Stop(); }

 private:
  static void ThrowErrno(Napi::Env env, const char* what) {
    int e = errno;
    Napi::Error err = Napi::Error::New(env, std::string(what) + ": " + std::strerror(e));
    err.Set("code", Napi::String::New(env, e == EMFILE ? "EMFILE" : e == ENFILE ? "ENFILE" : e == ENOMEM ? "ENOMEM" : "EIO"));
    err.ThrowAsJavaScriptException();
  }

  static void OnClosed(uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); }
  static void OnPrepareClosed(uv_handle_t* h) { delete reinterpret_cast<uv_prepare_t*>(h); }
  static void OnIdleClosed(uv_handle_t* h) { delete reinterpret_cast<uv_idle_t*>(h); }

  uint32_t* Sleeping() const { return reinterpret_cast<uint32_t*>(base_ + ring::kRingB.sleeping); }
  bool RingHasData() const {
    return wait::LoadAcquireU64(reinterpret_cast<const uint64_t*>(base_ + ring::kRingB.tail)) !=
           wait::LoadAcquireU64(reinterpret_cast<const uint64_t*>(base_ + ring::kRingB.head));
  }

  // Just before the loop polls. If the stub took the flag (it wrote the eventfd, handled by
  // OnReadable) or the loop has not asked since, deliver what came meanwhile with the flag still
  // down (the stub's answers during that delivery cost it no system call either), then ask and
  // look once more: the flag store is sequentially consistent, the mirror of the stub's doorbell
  // RMW before its flag exchange, so either the stub sees the flag and writes the eventfd or this
  // load sees its tail. While the idle handle spins the loop does not block, so it only looks.
  static void OnPrepare(uv_prepare_t* handle) {
    auto* self = static_cast<WakeListener*>(handle->data);
    if (self == nullptr || self->fd_ < 0) return;
    if (self->idle_ != nullptr && uv_is_active(reinterpret_cast<uv_handle_t*>(self->idle_))) {
      if (self->RingHasData()) self->Deliver();
      return;
    }
    if (wait::LoadU32(self->Sleeping()) != 0) return;  // asked, and nothing came unannounced since
    if (self->RingHasData()) {
      self->Deliver();
      if (self->fd_ < 0) return;  // the callback closed the listener
    }
    wait::StoreU32(self->Sleeping(), 1);
    if (self->RingHasData()) self->Deliver();
  }

  // Runs once per loop iteration while spinning: stop when the budget is spent.
  static void OnIdle(uv_idle_t* handle) {
    auto* self = static_cast<WakeListener*>(handle->data);
    if (self == nullptr || wait::NowNs() >= self->spin_until_ns_) uv_idle_stop(handle);
  }

  // After a wake-up's work: teach the policy how long the peer took, then poll if it pays.
  void AfterWake() {
    if (idle_ == nullptr) return;
    int64_t now = wait::NowNs();
    if (idle_since_ns_ > 0) policy_.Observe(now - idle_since_ns_, budget_ns_ > 0);
    idle_since_ns_ = now;
    budget_ns_ = policy_.Budget(now);
    if (budget_ns_ <= 0) return;
    spin_until_ns_ = now + budget_ns_;
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(idle_))) uv_idle_start(idle_, OnIdle);
  }

  static void OnReadable(uv_poll_t* handle, int status, int events) {
    auto* self = static_cast<WakeListener*>(handle->data);
    if (self == nullptr || self->fd_ < 0) return;
    uint64_t count;
    // Reset the counter first: a write that lands while the callback runs makes the fd
    // readable again, so it is never lost.
    while (::read(self->fd_, &count, sizeof count) < 0 && errno == EINTR) {
    }
    self->Deliver();
  }

  // Runs the callback (which drains ring B), then lets the spin policy learn.
  void Deliver() {
    Napi::Env env = env_;
    Napi::HandleScope scope(env);
    // MakeCallback: runs queued microtasks and nextTicks afterwards, as any I/O callback does.
    callback_.MakeCallback(env.Global(), {}, async_);
    if (env.IsExceptionPending()) {
      Napi::Error e = env.GetAndClearPendingException();
      napi_fatal_exception(env, e.Value());
    }
    if (fd_ >= 0) AfterWake();
  }

  void Stop() {
    if (prepare_ != nullptr) {
      prepare_->data = nullptr;
      uv_prepare_stop(prepare_);
      uv_close(reinterpret_cast<uv_handle_t*>(prepare_), OnPrepareClosed);
      prepare_ = nullptr;
    }
    if (idle_ != nullptr) {
      idle_->data = nullptr;
      uv_idle_stop(idle_);
      uv_close(reinterpret_cast<uv_handle_t*>(idle_), OnIdleClosed);
      idle_ = nullptr;
    }
    if (poll_ != nullptr) {
      poll_->data = nullptr;
      uv_poll_stop(poll_);
      uv_close(reinterpret_cast<uv_handle_t*>(poll_), OnClosed);
      poll_ = nullptr;
    }
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
    n0_.reset();  // the prepare handle, the only reader, is stopped
    base_ = nullptr;
    if (!callback_.IsEmpty()) callback_.Reset();
    if (!self_.IsEmpty()) self_.Reset();
  }

  Napi::Value Fd(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), fd_); }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    Stop();
    return info.Env().Undefined();
  }
  Napi::Value Ref(const Napi::CallbackInfo& info) {
    if (poll_ != nullptr) uv_ref(reinterpret_cast<uv_handle_t*>(poll_));
    if (idle_ != nullptr) uv_ref(reinterpret_cast<uv_handle_t*>(idle_));
    return info.Env().Undefined();
  }
  Napi::Value Unref(const Napi::CallbackInfo& info) {
    if (poll_ != nullptr) uv_unref(reinterpret_cast<uv_handle_t*>(poll_));
    if (idle_ != nullptr) uv_unref(reinterpret_cast<uv_handle_t*>(idle_));
    return info.Env().Undefined();
  }

  int fd_ = -1;
  uv_poll_t* poll_ = nullptr;
  uv_idle_t* idle_ = nullptr;  // only with a spin mode other than never
  uv_prepare_t* prepare_ = nullptr;
  std::shared_ptr<v8::BackingStore> n0_;
  uint8_t* base_ = nullptr;  // n0: ring B's words
  wait::WaitPolicy policy_;
  int64_t idle_since_ns_ = 0;
  int64_t budget_ns_ = 0;
  int64_t spin_until_ns_ = 0;
  napi_env env_ = nullptr;
  Napi::FunctionReference callback_;
  Napi::ObjectReference self_;
  Napi::AsyncContext async_;
};

}  // namespace

void InitWake(Napi::Env env, Napi::Object exports) { exports.Set("WakeListener", WakeListener::Define(env)); }

}  // namespace tritium
