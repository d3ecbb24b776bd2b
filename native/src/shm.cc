// Shared-memory segments exposed to JS as SharedArrayBuffers: memfds (the default) and POSIX
// shared-memory files in /dev/shm (the fallback where memfd_create is refused; docs/ipc.md,
// "Segments"). No protocol logic here.
#include "shm.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errno_error.h"
#include "futex.h"
#include "v8_interop.h"

namespace tritium {
namespace {

// The backing store owns the mapping: V8 calls this when the last SharedArrayBuffer (and every
// view on it) is collected, so JS can never observe an unmapped address.
void UnmapDeleter(void* data, size_t length, void* /*deleter_data*/) {
  if (data != nullptr && length > 0) munmap(data, length);
}

Napi::Value WrapMapping(Napi::Env env, void* addr, size_t size) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  std::unique_ptr<v8::BackingStore> store =
      v8::SharedArrayBuffer::NewBackingStore(addr, size, UnmapDeleter, nullptr);
  v8::Local<v8::SharedArrayBuffer> sab =
      v8::SharedArrayBuffer::New(isolate, std::shared_ptr<v8::BackingStore>(std::move(store)));
  return Napi::Value(env, FromV8(sab));
}

std::string ShmName(const Napi::Value& v) {
  // shm_open semantics: a single leading slash, no other slash. Keeps us inside /dev/shm.
  std::string name = v.As<Napi::String>().Utf8Value();
  return name[0] == '/' ? name : "/" + name;
}

bool ValidName(const std::string& name) {
  return name.size() > 1 && name.find('/', 1) == std::string::npos;
}

// Sizes a fresh segment, reserves its pages and maps it; 0 or the errno of the step that failed.
// The reservation matters: ftruncate of tmpfs or a memfd only sets a size, and memory that runs
// out later would surface as SIGBUS on first touch; posix_fallocate turns that into a catchable
// ENOSPC/ENOMEM now.
int SizeAndMap(int fd, size_t size, void** addr) {
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) return errno;
  int err = posix_fallocate(fd, 0, static_cast<off_t>(size));  // returns the error
  if (err != 0) return err;
  *addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return *addr == MAP_FAILED ? errno : 0;
}

// createShm(name, size): O_CREAT|O_EXCL, reserve pages, map (SizeAndMap).
Napi::Value CreateShm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "createShm(name: string, size: number)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::string name = ShmName(info[0]);
  if (!ValidName(name)) return ThrowErrno(env, EINVAL, "createShm " + name);
  double dsize = info[1].As<Napi::Number>().DoubleValue();
  if (!(dsize > 0)) return ThrowErrno(env, EINVAL, "createShm " + name + " size");
  size_t size = static_cast<size_t>(dsize);

  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return ThrowErrno(env, errno, "shm_open " + name);
  void* addr = MAP_FAILED;
  int err = SizeAndMap(fd, size, &addr);
  close(fd);
  if (err != 0) {
    shm_unlink(name.c_str());  // we created it (O_EXCL), so a failed create leaves nothing behind
    return ThrowErrno(env, err, "createShm " + name + " (" + std::to_string(size) + " bytes)");
  }
  return WrapMapping(env, addr, size);
}

// openShm(name): map an existing segment; its size comes from fstat.
Napi::Value OpenShm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "openShm(name: string)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::string name = ShmName(info[0]);
  if (!ValidName(name)) return ThrowErrno(env, EINVAL, "openShm " + name);
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return ThrowErrno(env, errno, "shm_open " + name);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return ThrowErrno(env, e, "fstat " + name);
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return ThrowErrno(env, EINVAL, "openShm " + name + " is empty");
  }
  void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (addr == MAP_FAILED) return ThrowErrno(env, e, "mmap " + name);
  return WrapMapping(env, addr, size);
}

// unlinkShm(name): true if removed, false if it did not exist.
Napi::Value UnlinkShm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "unlinkShm(name: string)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::string name = ShmName(info[0]);
  if (shm_unlink(name.c_str()) == 0) return Napi::Boolean::New(env, true);
  if (errno == ENOENT) return Napi::Boolean::New(env, false);
  return ThrowErrno(env, errno, "shm_unlink " + name);
}

// releaseShm(sab): drop the shared pages now instead of at GC time. A SharedArrayBuffer cannot
// be detached, so stale views may still exist; the range is atomically replaced by private
// anonymous memory (MAP_FIXED) so such a view reads zeros instead of faulting, costs no memory
// until written, and the backing-store deleter later munmaps it as usual.
Napi::Value ReleaseShm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint8_t* data;
  size_t length;
  if (info.Length() < 1 || !SabInfo(info[0], &data, &length)) {
    Napi::TypeError::New(env, "releaseShm(buffer: SharedArrayBuffer)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  void* r = mmap(data, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (r == MAP_FAILED) return ThrowErrno(env, errno, "releaseShm");
  return env.Undefined();
}

// hollowShm(sab): hand the segment's pages back to tmpfs (MADV_REMOVE, a hole punched in the
// file) while every mapping of it stays valid: a later touch reads zeros and a later write takes
// a fresh page. Node calls it when the last block of a grown segment is freed (docs/ipc.md,
// "Segments"), so a large tensor's space returns without unmapping anything the stub maps too.
Napi::Value HollowShm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint8_t* data;
  size_t length;
  if (info.Length() < 1 || !SabInfo(info[0], &data, &length)) {
    Napi::TypeError::New(env, "hollowShm(buffer: SharedArrayBuffer)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (madvise(data, length, MADV_REMOVE) != 0) return ThrowErrno(env, errno, "hollowShm");
  return env.Undefined();
}

// reserveShm(name, offset, length): allocate the tmpfs pages of a range of a hollowed segment
// before a block there is written, so a full /dev/shm is a catchable ENOSPC here and not a
// SIGBUS on first touch (the reason createShm reserves every page).
Napi::Value ReserveShm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber()) {
    Napi::TypeError::New(env, "reserveShm(name: string, offset: number, length: number)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::string name = ShmName(info[0]);
  if (!ValidName(name)) return ThrowErrno(env, EINVAL, "reserveShm " + name);
  int64_t off = info[1].As<Napi::Number>().Int64Value();
  int64_t len = info[2].As<Napi::Number>().Int64Value();
  if (off < 0 || len <= 0) return ThrowErrno(env, EINVAL, "reserveShm " + name + " range");
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return ThrowErrno(env, errno, "shm_open " + name);
  int err = posix_fallocate(fd, static_cast<off_t>(off), static_cast<off_t>(len));
  close(fd);
  if (err != 0) return ThrowErrno(env, err, "reserveShm " + name + " (" + std::to_string(len) + " bytes)");
  return env.Undefined();
}

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

// memfd_create, close-on-exec. MFD_NOEXEC_SEAL first: with vm.memfd_noexec=2 (Linux >= 6.3) a
// memfd without it is refused, and tensors never need to be executable; kernels before 6.3 do
// not know the flag (EINVAL), so then without it.
int MemfdCreate(const std::string& name) {
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_NOEXEC_SEAL);
  if (fd < 0 && errno == EINVAL) fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  return fd;
}

// probeMemfd(): '' when memfds can be created here, else why not (ENOSYS on kernels before
// 3.17, EPERM or ENOSYS where a seccomp filter refuses the call). Creates no page.
Napi::Value ProbeMemfd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = MemfdCreate("tritium_probe");
  if (fd < 0) return Napi::String::New(env, std::string("memfd_create: ") + std::strerror(errno));
  close(fd);
  return Napi::String::New(env, "");
}

// createMemfd(name, size): { fd, buffer }. The segment has no name in any filesystem, so it
// is freed with its last descriptor and mapping, whatever way the processes end; `name` only
// labels it in /proc/<pid>/fd and /proc/<pid>/maps (`/memfd:<name> (deleted)`). Its pages are
// reserved now, as createShm does: a refused charge (ENOMEM, ENOSPC) is an error here rather
// than a SIGBUS on first touch. The caller owns `fd` (close-on-exec).
Napi::Value CreateMemfd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "createMemfd(name: string, size: number)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::string name = info[0].As<Napi::String>().Utf8Value();
  double dsize = info[1].As<Napi::Number>().DoubleValue();
  if (!(dsize > 0)) return ThrowErrno(env, EINVAL, "createMemfd " + name + " size");
  size_t size = static_cast<size_t>(dsize);
  int fd = MemfdCreate(name);
  if (fd < 0) return ThrowErrno(env, errno, "memfd_create " + name);
  void* addr = MAP_FAILED;
  int err = SizeAndMap(fd, size, &addr);
  if (err != 0) {
    close(fd);  // the only reference: the pages go with it
    return ThrowErrno(env, err, "createMemfd " + name + " (" + std::to_string(size) + " bytes)");
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("fd", Napi::Number::New(env, fd));
  out.Set("buffer", WrapMapping(env, addr, size));
  return out;
}

// mapFd(fd): maps a segment received as a descriptor; its size comes from fstat. The caller
// still owns `fd` (the mapping holds its own reference to the file).
Napi::Value MapFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(env, "mapFd(fd: number)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int fd = info[0].As<Napi::Number>().Int32Value();
  struct stat st;
  if (fstat(fd, &st) != 0) return ThrowErrno(env, errno, "fstat of descriptor " + std::to_string(fd));
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) return ThrowErrno(env, EINVAL, "mapFd: descriptor " + std::to_string(fd) + " is empty");
  void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return ThrowErrno(env, errno, "mmap of descriptor " + std::to_string(fd));
  return WrapMapping(env, addr, size);
}

// reserveFd(fd, offset, length): reserveShm for a segment held by descriptor (a memfd).
Napi::Value ReserveFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsNumber()) {
    Napi::TypeError::New(env, "reserveFd(fd: number, offset: number, length: number)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int fd = info[0].As<Napi::Number>().Int32Value();
  int64_t off = info[1].As<Napi::Number>().Int64Value();
  int64_t len = info[2].As<Napi::Number>().Int64Value();
  if (off < 0 || len <= 0) return ThrowErrno(env, EINVAL, "reserveFd range");
  int err = posix_fallocate(fd, static_cast<off_t>(off), static_cast<off_t>(len));
  if (err != 0) return ThrowErrno(env, err, "reserveFd (" + std::to_string(len) + " bytes)");
  return env.Undefined();
}

// futexWake(sab, byteOffset): wake the other process sleeping on a doorbell word.
Napi::Value FutexWakeJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint8_t* data;
  size_t length;
  if (info.Length() < 2 || !SabInfo(info[0], &data, &length) || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "futexWake(buffer: SharedArrayBuffer, byteOffset: number)")
        .ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int64_t off = info[1].As<Napi::Number>().Int64Value();
  if (off < 0 || off % 4 != 0 || static_cast<size_t>(off) + 4 > length) {
    Napi::RangeError::New(env, "futexWake: byteOffset out of range or unaligned").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int r = FutexWake(reinterpret_cast<uint32_t*>(data + off));
  return Napi::Number::New(env, r);
}

}  // namespace

void InitShm(Napi::Env env, Napi::Object exports) {
  exports.Set("createShm", Napi::Function::New(env, CreateShm, "createShm"));
  exports.Set("openShm", Napi::Function::New(env, OpenShm, "openShm"));
  exports.Set("unlinkShm", Napi::Function::New(env, UnlinkShm, "unlinkShm"));
  exports.Set("releaseShm", Napi::Function::New(env, ReleaseShm, "releaseShm"));
  exports.Set("hollowShm", Napi::Function::New(env, HollowShm, "hollowShm"));
  exports.Set("reserveShm", Napi::Function::New(env, ReserveShm, "reserveShm"));
  exports.Set("probeMemfd", Napi::Function::New(env, ProbeMemfd, "probeMemfd"));
  exports.Set("createMemfd", Napi::Function::New(env, CreateMemfd, "createMemfd"));
  exports.Set("mapFd", Napi::Function::New(env, MapFd, "mapFd"));
  exports.Set("reserveFd", Napi::Function::New(env, ReserveFd, "reserveFd"));
  exports.Set("futexWake", Napi::Function::New(env, FutexWakeJs, "futexWake"));
}

}  // namespace tritium
