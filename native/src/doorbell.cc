// DoorbellWaiter: a native thread watching a u32 futex word in shared memory and calling a JS
// callback on the event loop (via a ThreadSafeFunction) whenever the word changes. The event
// loop never blocks: the thread does the spinning and the futex sleep.
#include "doorbell.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "v8_interop.h"
#include "wait_core.h"

namespace tritium {
namespace {

// State shared by the JS object, the native thread and queued TSFN calls. It is deleted by the
// TSFN finalizer, which runs after the last queued call, so no party ever sees it dangling.
struct WaiterState {
  uint32_t* word = nullptr;
  uint32_t* sleep_flag = nullptr;  // optional: 1 while the thread is inside FUTEX_WAIT
  int64_t timeout_ns = 0;
  bool spin_yield = false;  // sched_yield() between polls: gives the core away on small machines
  wait::WaitPolicy policy;  // touched by the thread only
  std::atomic<bool> stop{false};
  std::atomic<bool> exited{false};
  std::atomic<bool> pending{false};  // a callback is queued and has not started yet
  std::atomic<bool> closed{false};
  Napi::ThreadSafeFunction tsfn;
};

void Notify(WaiterState* s) {
  // Coalesce: one queued callback drains everything, so never flood the loop's queue.
  if (s->pending.exchange(true)) return;
  napi_status st = s->tsfn.NonBlockingCall([s](Napi::Env env, Napi::Function fn) {
    s->pending.store(false);  // cleared first: a change during the callback queues another one
    if (env == nullptr || s->closed.load()) return;
    fn.Call({});
  });
  if (st != napi_ok) s->pending.store(false);
}

void Run(WaiterState* s) {
  uint32_t last = wait::LoadU32(s->word);
  while (!s->stop.load(std::memory_order_relaxed)) {
    uint32_t cur = wait::LoadU32(s->word);
    if (cur != last) {
      last = cur;
      Notify(s);
      continue;
    }
    // Out of work: poll a while only if the policy says it pays (see wait_core.h), then
    // sleep. A futex sleep/wake pair costs microseconds of scheduler latency on both sides.
    int64_t idle_since = wait::NowNs();
    int64_t budget = s->policy.Budget(idle_since);
    bool changed = wait::Spin(budget, s->spin_yield, [s, last] {
      return s->stop.load(std::memory_order_relaxed) || wait::LoadU32(s->word) != last;
    });
    if (!changed && !s->stop.load()) {
      if (s->sleep_flag) wait::StoreU32(s->sleep_flag, 1u);
      // The kernel compares *word with `last` atomically, so a push after our last read is
      // never missed; the timeout only bounds how long a stop request can go unnoticed.
      int r = wait::FutexWait(s->word, last, s->timeout_ns);
      if (s->sleep_flag) wait::StoreU32(s->sleep_flag, 0u);
      if (r == -ETIMEDOUT) continue;  // idle, not a message: teaches the policy nothing
    }
    s->policy.Observe(wait::NowNs() - idle_since, budget > 0);
  }
  s->exited.store(true);
}

class DoorbellWaiter : public Napi::ObjectWrap<DoorbellWaiter> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "DoorbellWaiter",
                       {InstanceMethod("close", &DoorbellWaiter::Close),
                        InstanceMethod("ref", &DoorbellWaiter::Ref),
                        InstanceMethod("unref", &DoorbellWaiter::Unref)});
  }

  // new DoorbellWaiter(buffer: SharedArrayBuffer, byteOffset, callback, opts?)
  //   opts: { spinUs?: number = 30, spinMode?: 'adaptive'|'always'|'never' = 'adaptive',
  //           spinYield?: boolean, timeoutMs?: number = 50, sleepFlagOffset?: number }
  explicit DoorbellWaiter(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DoorbellWaiter>(info) {
    Napi::Env env = info.Env();
    uint8_t* data;
    size_t length;
    if (info.Length() < 3 || !SabInfo(info[0], &data, &length) || !info[1].IsNumber() ||
        !info[2].IsFunction()) {
      Napi::TypeError::New(env, "new DoorbellWaiter(buffer: SharedArrayBuffer, byteOffset: number, cb: () => void, opts?)")
          .ThrowAsJavaScriptException();
      return;
    }
    auto checkOff = [&](int64_t off) { return off >= 0 && off % 4 == 0 && static_cast<size_t>(off) + 4 <= length; };
    int64_t off = info[1].As<Napi::Number>().Int64Value();
    if (!checkOff(off)) {
      Napi::RangeError::New(env, "DoorbellWaiter: byteOffset out of range or unaligned").ThrowAsJavaScriptException();
      return;
    }
    double spin_us = 30, timeout_ms = 50;
    bool spin_yield = false;
    wait::SpinMode mode = wait::SpinMode::kAdaptive;
    int64_t flag_off = -1;
    if (info.Length() > 3 && info[3].IsObject()) {
      Napi::Object o = info[3].As<Napi::Object>();
      if (o.Get("spinUs").IsNumber()) spin_us = o.Get("spinUs").As<Napi::Number>().DoubleValue();
      if (o.Get("spinYield").IsBoolean()) spin_yield = o.Get("spinYield").As<Napi::Boolean>().Value();
      if (o.Get("spinMode").IsString()) {
        std::string m = o.Get("spinMode").As<Napi::String>().Utf8Value();
        if (!wait::ParseSpinMode(m.c_str(), &mode)) {
          Napi::RangeError::New(env, "DoorbellWaiter: spinMode must be 'adaptive', 'always' or 'never'")
              .ThrowAsJavaScriptException();
          return;
        }
      }
      if (o.Get("timeoutMs").IsNumber()) timeout_ms = o.Get("timeoutMs").As<Napi::Number>().DoubleValue();
      if (o.Get("sleepFlagOffset").IsNumber()) {
        flag_off = o.Get("sleepFlagOffset").As<Napi::Number>().Int64Value();
        if (!checkOff(flag_off)) {
          Napi::RangeError::New(env, "DoorbellWaiter: sleepFlagOffset out of range").ThrowAsJavaScriptException();
          return;
        }
      }
    }
    buffer_ = Napi::Persistent(info[0].As<Napi::Object>());  // keeps the mapping alive for the thread
    state_ = new WaiterState();
    state_->word = reinterpret_cast<uint32_t*>(data + off);
    state_->sleep_flag = flag_off >= 0 ? reinterpret_cast<uint32_t*>(data + flag_off) : nullptr;
    state_->policy.Configure(mode, spin_us > 0 ? static_cast<int64_t>(spin_us * 1000) : 0);
    state_->spin_yield = spin_yield;
    state_->timeout_ns = timeout_ms > 0 ? static_cast<int64_t>(timeout_ms * 1e6) : 50000000;
    WaiterState* s = state_;
    state_->tsfn = Napi::ThreadSafeFunction::New(env, info[2].As<Napi::Function>(), "tritium.doorbell", 0, 1,
                                                 [s](Napi::Env) { delete s; });
    thread_ = std::thread(Run, s);
  }

  ~DoorbellWaiter() override { Stop(); }

 private:
  // Joins the thread and releases the TSFN (which lets the process exit). Idempotent.
  void Stop() {
    if (state_ == nullptr) return;
    WaiterState* s = state_;
    state_ = nullptr;
    s->stop.store(true);
    // The thread may be about to sleep on the word; keep waking until it has noticed the stop.
    while (!s->exited.load()) {
      wait::FutexWake(s->word);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (thread_.joinable()) thread_.join();
    s->closed.store(true);
    s->tsfn.Release();
    if (!buffer_.IsEmpty()) buffer_.Reset();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    Stop();
    return info.Env().Undefined();
  }
  Napi::Value Ref(const Napi::CallbackInfo& info) {
    if (state_) state_->tsfn.Ref(info.Env());
    return info.Env().Undefined();
  }
  Napi::Value Unref(const Napi::CallbackInfo& info) {
    if (state_) state_->tsfn.Unref(info.Env());
    return info.Env().Undefined();
  }

  WaiterState* state_ = nullptr;
  std::thread thread_;
  Napi::ObjectReference buffer_;
};

}  // namespace

void InitDoorbell(Napi::Env env, Napi::Object exports) {
  exports.Set("DoorbellWaiter", DoorbellWaiter::Define(env));
}

}  // namespace tritium
