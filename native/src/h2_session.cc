// H2Session: the server side of one HTTP/2 connection over libnghttp2, for the gRPC frontend
// (frontends/grpc/transport/h2-session.ts drives it; docs/design.md, "gRPC transport").
//
// Why not node:http2: it wraps the same nghttp2 in a Duplex stream per call, converts every
// header block to and from objects, and sends a unary answer in two writes a loop turn apart
// (trailers always leave from setImmediate). Here the JavaScript side owns the socket; bytes
// read go in through receive(), which reports what happened as events (below), and flush()
// hands over every frame nghttp2 has to send as one run of bytes (in a buffer JavaScript reuses
// while the socket takes its bytes at once), so a unary answer (HEADERS, DATA, trailers) is one
// write, and an answer of a whole batch too.
//
// Events reach JavaScript as numbers in a Float64Array the session is given (bind()): filling
// it costs no JavaScript object per event (an array of events cost a napi_set_element per field,
// the largest item of receive() under load). receive() and flush() write ev[0] = the number of
// event fields that follow from ev[2], and ev[1] = 1 when more are waiting for more(), which
// refills the array (a burst larger than the array, or closes queued by a flush). The few
// events that carry objects (a new header block, a copied DATA chunk) put them in the objects
// array bound with it and give their index.
//
// Event records (kinds below, then their fields):
//   kHeaders, stream, -1 | object index, endStream     request headers: the [name, value, ...]
//                                                        array, or -1: the same fields, in the same
//                                                        order, as the last request of this
//                                                        connection (JavaScript reuses what it made)
//   kData, stream, offset, length                        a DATA chunk at [offset, offset+length) of the input
//   kDataCopy, stream, object index                      a DATA chunk nghttp2 gave from its own memory (copied)
//   kEnd, stream                                         the client ended its side (END_STREAM)
//   kClose, stream, errorCode                            the stream closed (0: normally)
//   kPing                                                the client pinged (nghttp2 answers it)
//   kPingAck                                             the client answered one of our pings
//   kGoaway, errorCode                                   the client is going away
// Flow control is manual (no automatic WINDOW_UPDATE): JavaScript consume()s what it took in,
// so a paused stream holds its client back as node:http2's pause() does.
#include "h2_session.h"

#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "nghttp2_api.h"

namespace tritium {
namespace {

enum EventKind : int32_t { kHeaders = 1, kData = 2, kEnd = 3, kClose = 4, kPing = 5, kPingAck = 6, kGoaway = 7, kDataCopy = 8 };

// ev[0] and ev[1] of the event array; the fields start at ev[kEventBase].
constexpr size_t kEventBase = 2;

// A request's header block is bounded as node:http2 bounds it by default.
constexpr size_t kMaxHeaderPairs = 128;
constexpr size_t kMaxHeaderBytes = 65535;
// Strings of request header blocks kept per connection for the next calls.
constexpr size_t kInternedStrings = 32;
// What one flush() returns at most (plus one frame).
constexpr size_t kFlushBytes = 1 << 20;

struct Chunk {
  Napi::Reference<Napi::Value> keep;  // the JavaScript bytes, while `data` points into them
  std::vector<uint8_t> owned;         // or bytes of the chunk's own (answer())
  const uint8_t* data;
  size_t length;
};

using Fields = std::vector<std::string>;  // name, value, ...

struct OutStream {
  std::deque<Chunk> chunks;
  size_t offset = 0;  // into chunks.front()
  size_t queued = 0;
  bool ended = false;
  bool deferred = false;
  std::shared_ptr<const Fields> trailers;
};

// A header block made once and sent many times (`new H2HeaderBlock([name, value, ...])`): the
// usual gRPC response headers and OK trailers then cost no string conversion per call.
class H2HeaderBlock : public Napi::ObjectWrap<H2HeaderBlock> {
 public:
  static Napi::Function Define(Napi::Env env) { return DefineClass(env, "H2HeaderBlock", {}); }

  explicit H2HeaderBlock(const Napi::CallbackInfo& info) : Napi::ObjectWrap<H2HeaderBlock>(info) {
    if (info.Length() < 1 || !info[0].IsArray()) {
      Napi::TypeError::New(info.Env(), "H2HeaderBlock([name, value, ...])").ThrowAsJavaScriptException();
      return;
    }
    fields_ = ToFields(info[0].As<Napi::Array>());
  }

  static std::shared_ptr<const Fields> ToFields(Napi::Array a) {
    auto fields = std::make_shared<Fields>(a.Length());
    for (uint32_t i = 0; i < fields->size(); i++) (*fields)[i] = a.Get(i).ToString().Utf8Value();
    return fields;
  }

  std::shared_ptr<const Fields> fields_;
};

// The fields of a header argument: an H2HeaderBlock, or an array [name, value, ...].
std::shared_ptr<const Fields> FieldsOf(Napi::Value v) {
  if (v.IsArray()) return H2HeaderBlock::ToFields(v.As<Napi::Array>());
  if (v.IsObject()) {
    H2HeaderBlock* block = H2HeaderBlock::Unwrap(v.As<Napi::Object>());
    if (block != nullptr) return block->fields_;
  }
  return std::make_shared<Fields>();
}

// Marks a stream whose request headers have arrived: a later HEADERS frame is its trailers.
char kSeen;

class H2Session : public Napi::ObjectWrap<H2Session> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "H2Session",
                       {
                           InstanceMethod<&H2Session::Bind>("bind"),
                           InstanceMethod<&H2Session::Receive>("receive"),
                           InstanceMethod<&H2Session::More>("more"),
                           InstanceMethod<&H2Session::Flush>("flush"),
                           InstanceMethod<&H2Session::Answer>("answer"),
                           InstanceMethod<&H2Session::Respond>("respond"),
                           InstanceMethod<&H2Session::Write>("write"),
                           InstanceMethod<&H2Session::End>("end"),
                           InstanceMethod<&H2Session::Reset>("reset"),
                           InstanceMethod<&H2Session::Consume>("consume"),
                           InstanceMethod<&H2Session::Queued>("queued"),
                           InstanceMethod<&H2Session::Ping>("ping"),
                           InstanceMethod<&H2Session::Goaway>("goaway"),
                           InstanceMethod<&H2Session::SetWindow>("setLocalWindowSize"),
                           InstanceMethod<&H2Session::WantIo>("wantIo"),
                           InstanceMethod<&H2Session::Destroy>("destroy"),
                       });
  }

  // new H2Session({ maxConcurrentStreams, initialWindowSize })
  explicit H2Session(const Napi::CallbackInfo& info) : Napi::ObjectWrap<H2Session>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject()) {
      Napi::TypeError::New(env, "H2Session(options)").ThrowAsJavaScriptException();
      return;
    }
    Napi::Object o = info[0].As<Napi::Object>();
    const uint32_t streams = o.Get("maxConcurrentStreams").As<Napi::Number>().Uint32Value();
    const uint32_t window = o.Get("initialWindowSize").As<Napi::Number>().Uint32Value();

    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, OnBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(cbs, OnHeader);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, OnFrameRecv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, OnDataChunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, OnStreamClose);
    nghttp2_option* opt = nullptr;
    nghttp2_option_new(&opt);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    const int rv = nghttp2_session_server_new2(&session_, cbs, this, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0) {
      session_ = nullptr;
      Napi::Error::New(env, std::string("nghttp2: ") + nghttp2_strerror(rv)).ThrowAsJavaScriptException();
      return;
    }
    const nghttp2_settings_entry iv[] = {
        {nghttp2::kSettingsMaxConcurrentStreams, streams},
        {nghttp2::kSettingsInitialWindowSize, window},
        {nghttp2::kSettingsMaxHeaderListSize, static_cast<uint32_t>(kMaxHeaderBytes)},
    };
    nghttp2_submit_settings(session_, 0, iv, sizeof iv / sizeof iv[0]);
  }

  ~H2Session() override { Free(); }

 private:
  // ---- receiving ----

  // bind(ev: Float64Array, objects: unknown[]): where receive(), flush() and more() put events.
  Napi::Value Bind(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
        info[0].As<Napi::Float64Array>().ElementLength() <= kEventBase + 4 || !info[1].IsArray()) {
      Napi::TypeError::New(env, "bind(ev: Float64Array of more than 6, objects: [])").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    evJs_ = Napi::Persistent(info[0].As<Napi::Float64Array>());
    objsJs_ = Napi::Persistent(info[1].As<Napi::Array>());
    return env.Undefined();
  }

  // receive(chunk): 0 with the events in the bound array, or a negative nghttp2 error code
  // (the connection is broken: flush() what nghttp2 queued, a GOAWAY, then close).
  Napi::Value Receive(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (session_ == nullptr || evJs_.IsEmpty()) return Napi::Number::New(env, -1);
    auto in = info[0].As<Napi::Uint8Array>();
    env_ = env;
    inBase_ = in.Data();
    inLength_ = in.ByteLength();
    const ssize_t rv = nghttp2_session_mem_recv(session_, inBase_, inLength_);
    inBase_ = nullptr;
    if (rv < 0) {
      // The connection ends (JavaScript closes every stream): what this read reported is dropped.
      ev_.clear();
      evStarts_.clear();
      evTaken_ = 0;
      objCount_ = 0;
      return Napi::Number::New(env, static_cast<double>(rv));
    }
    Deliver();
    return Napi::Number::New(env, 0);
  }

  // more(): the next events into the bound array (after ev[1] said there were more).
  Napi::Value More(const Napi::CallbackInfo& info) {
    if (!evJs_.IsEmpty()) Deliver();
    return info.Env().Undefined();
  }

  // Copies whole events waiting in ev_ into the bound array, as many as fit (ev[0], ev[1]).
  void Deliver() {
    Napi::Float64Array ev = evJs_.Value();
    double* out = ev.Data();
    const size_t room = ev.ElementLength() - kEventBase;
    size_t n = ev_.size() - evTaken_;
    if (n > room) {
      // Whole events only: cut at the last record start that fits.
      n = 0;
      for (size_t at : evStarts_) {
        if (at < evTaken_) continue;
        if (at - evTaken_ > room) break;
        n = at - evTaken_;
      }
      if (n == 0) n = room;  // cannot happen: every record is shorter than the array
    }
    std::memcpy(out + kEventBase, ev_.data() + evTaken_, n * sizeof(double));
    evTaken_ += n;
    out[0] = static_cast<double>(n);
    out[1] = evTaken_ < ev_.size() ? 1 : 0;
    if (evTaken_ == ev_.size()) {
      ev_.clear();
      evStarts_.clear();
      evTaken_ = 0;
      objCount_ = 0;
    }
  }

  void Begin() { evStarts_.push_back(ev_.size()); }
  void Push(double v) { ev_.push_back(v); }
  void PushObject(Napi::Value v) {
    objsJs_.Value().Set(objCount_, v);
    Push(objCount_++);
  }

  // A request's header block: -1 when it repeats the connection's last one field for
  // field (a client's calls mostly do), else the array, its strings made once per distinct
  // name and value and kept for the connection's next calls.
  void PushHeaders() {
    if (block_ == last_) {
      Push(-1);
      return;
    }
    Napi::Array a = Napi::Array::New(env_, block_.size());
    for (uint32_t i = 0; i < block_.size(); i++) a.Set(i, Interned(block_[i]));
    PushObject(a);
    last_.swap(block_);
  }

  // The JavaScript string for `text`, from a small per-connection table (names and the
  // values that repeat: method, path, content type, user agent...). The strings live in one
  // JavaScript array (N-API version 8 makes references to objects only), at the index of
  // their text in `stringKeys_`.
  Napi::Value Interned(const std::string& text) {
    for (uint32_t i = 0; i < stringKeys_.size(); i++) {
      if (stringKeys_[i] == text) return stringsJs_.Value().Get(i);
    }
    Napi::String str = Napi::String::New(env_, text);
    if (stringKeys_.size() < kInternedStrings) {
      if (stringsJs_.IsEmpty()) stringsJs_ = Napi::Persistent(Napi::Array::New(env_));
      stringsJs_.Value().Set(static_cast<uint32_t>(stringKeys_.size()), str);
      stringKeys_.push_back(text);
    }
    return str;
  }

  static H2Session* Self(void* user) { return static_cast<H2Session*>(user); }

  static int OnBeginHeaders(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    H2Session* self = Self(user);
    const auto* hd = reinterpret_cast<const nghttp2_frame_hd*>(frame);
    if (hd->type != nghttp2::kHeaders) return 0;
    if (nghttp2_session_get_stream_user_data(session, hd->stream_id) == nullptr) {
      nghttp2_session_set_stream_user_data(session, hd->stream_id, &kSeen);
      self->block_.clear();
      self->headerBytes_ = 0;
      self->inRequest_ = true;
    } else {
      self->inRequest_ = false;  // trailers: only their END_STREAM matters
    }
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame*, const uint8_t* name, size_t namelen, const uint8_t* value,
                      size_t valuelen, uint8_t, void* user) {
    H2Session* self = Self(user);
    if (!self->inRequest_) return 0;
    self->headerBytes_ += namelen + valuelen + 32;
    if (self->block_.size() >= 2 * kMaxHeaderPairs || self->headerBytes_ > kMaxHeaderBytes) {
      return nghttp2::kErrTemporalCallbackFailure;  // resets this stream only
    }
    self->block_.emplace_back(reinterpret_cast<const char*>(name), namelen);
    self->block_.emplace_back(reinterpret_cast<const char*>(value), valuelen);
    return 0;
  }

  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    H2Session* self = Self(user);
    const auto* hd = reinterpret_cast<const nghttp2_frame_hd*>(frame);
    const bool endStream = (hd->flags & nghttp2::kFlagEndStream) != 0;
    switch (hd->type) {
      case nghttp2::kHeaders:
        if (self->inRequest_) {
          self->inRequest_ = false;
          self->Begin();
          self->Push(kHeaders);
          self->Push(hd->stream_id);
          self->PushHeaders();
          self->Push(endStream ? 1 : 0);
        } else if (endStream) {
          self->Begin();
          self->Push(kEnd);
          self->Push(hd->stream_id);
        }
        break;
      case nghttp2::kData:
        if (endStream) {
          self->Begin();
          self->Push(kEnd);
          self->Push(hd->stream_id);
        }
        break;
      case nghttp2::kPing:
        self->Begin();
        self->Push((hd->flags & nghttp2::kFlagAck) != 0 ? kPingAck : kPing);
        break;
      case nghttp2::kGoaway:
        self->Begin();
        self->Push(kGoaway);
        self->Push(reinterpret_cast<const nghttp2_goaway*>(frame)->error_code);
        break;
      default:
        break;
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len, void* user) {
    H2Session* self = Self(user);
    self->Begin();
    // nghttp2 hands DATA payloads out of the input it was given; should it not, copy.
    if (data >= self->inBase_ && data + len <= self->inBase_ + self->inLength_) {
      self->Push(kData);
      self->Push(stream_id);
      self->Push(static_cast<double>(data - self->inBase_));
      self->Push(static_cast<double>(len));
    } else {
      self->Push(kDataCopy);
      self->Push(stream_id);
      self->PushObject(Napi::Buffer<uint8_t>::Copy(self->env_, data, len));
    }
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user) {
    H2Session* self = Self(user);
    self->out_.erase(stream_id);
    // Inside receive() or flush() (nghttp2 closes streams only there): reported at its end.
    self->Begin();
    self->Push(kClose);
    self->Push(stream_id);
    self->Push(static_cast<double>(error_code));
    return 0;
  }

  // ---- sending ----

  static ssize_t ReadData(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length, uint32_t* flags,
                          nghttp2_data_source* source, void*) {
    auto* s = static_cast<OutStream*>(source->ptr);
    size_t n = 0;
    while (n < length && !s->chunks.empty()) {
      Chunk& c = s->chunks.front();
      const size_t take = std::min(length - n, c.length - s->offset);
      std::memcpy(buf + n, c.data + s->offset, take);
      n += take;
      s->offset += take;
      if (s->offset == c.length) {
        s->chunks.pop_front();
        s->offset = 0;
      }
    }
    s->queued -= n;
    if (s->chunks.empty()) {
      if (s->ended) {
        *flags |= nghttp2::kDataFlagEof;
        if (s->trailers && !s->trailers->empty()) {
          *flags |= nghttp2::kDataFlagNoEndStream;
          std::vector<nghttp2_nv> nv = ToNv(*s->trailers);
          nghttp2_submit_trailer(session, stream_id, nv.data(), nv.size());
        }
      } else if (n == 0) {
        s->deferred = true;
        return nghttp2::kErrDeferred;
      }
    }
    return static_cast<ssize_t>(n);
  }

  static std::vector<nghttp2_nv> ToNv(const Fields& flat) {
    std::vector<nghttp2_nv> nv(flat.size() / 2);
    for (size_t i = 0; i < nv.size(); i++) {
      const std::string& k = flat[2 * i];
      const std::string& v = flat[2 * i + 1];
      nv[i] = {reinterpret_cast<uint8_t*>(const_cast<char*>(k.data())), reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), k.size(),
               v.size(), nghttp2::kNvFlagNone};
    }
    return nv;
  }

  // respond(stream, headers, body): headers (an H2HeaderBlock or [name, value, ...]); body = false ends the stream with them
  // (a trailers-only answer), true opens a body that write() and end() fill.
  Napi::Value Respond(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (session_ == nullptr) return Napi::Number::New(env, -1);
    const int32_t id = info[0].As<Napi::Number>().Int32Value();
    const std::shared_ptr<const Fields> fields = FieldsOf(info[1]);
    int rv;
    // A stream nghttp2 no longer has (reset meanwhile) gets no body: its state would never be freed.
    if (info[2].ToBoolean() && nghttp2_session_get_stream_user_data(session_, id) != nullptr) {
      rv = SubmitWithBody(id, *fields);
    } else {
      std::vector<nghttp2_nv> nv = ToNv(*fields);
      rv = nghttp2_submit_response(session_, id, nv.data(), nv.size(), nullptr);
    }
    return Napi::Number::New(env, rv);
  }

  // Submits stream `id`'s response headers with a body that ReadData takes from the stream's
  // OutStream, made here and filled by the caller (nghttp2 reads it only when sending; `made`,
  // when given, is set to it). Returns nghttp2's code; on failure the OutStream is gone again.
  int SubmitWithBody(int32_t id, const Fields& fields, OutStream** made = nullptr) {
    OutStream& s = out_[id];
    std::vector<nghttp2_nv> nv = ToNv(fields);
    nghttp2_data_provider prd;
    prd.source.ptr = &s;
    prd.read_callback = ReadData;
    const int rv = nghttp2_submit_response(session_, id, nv.data(), nv.size(), &prd);
    if (rv != 0) out_.erase(id);
    else if (made != nullptr) *made = &s;  // out_ is node-based: the address outlives later inserts
    return rv;
  }

  OutStream* Find(int32_t id) {
    auto it = out_.find(id);
    return it == out_.end() ? nullptr : &it->second;
  }

  void Wake(int32_t id, OutStream* s) {
    if (s->deferred) {
      s->deferred = false;
      nghttp2_session_resume_data(session_, id);
    }
  }

  // write(stream, bytes): queues bytes of the body (kept by reference until sent).
  Napi::Value Write(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const int32_t id = info[0].As<Napi::Number>().Int32Value();
    OutStream* s = session_ == nullptr ? nullptr : Find(id);
    if (s == nullptr || s->ended) return Napi::Boolean::New(env, false);
    auto bytes = info[1].As<Napi::Uint8Array>();
    if (bytes.ByteLength() > 0) {
      s->chunks.push_back(Chunk{Napi::Persistent(info[1]), {}, bytes.Data(), bytes.ByteLength()});
      s->queued += bytes.ByteLength();
    }
    Wake(id, s);
    return Napi::Boolean::New(env, true);
  }

  // end(stream, trailers | undefined): ends the body, with these trailers (as respond's headers).
  Napi::Value End(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const int32_t id = info[0].As<Napi::Number>().Int32Value();
    OutStream* s = session_ == nullptr ? nullptr : Find(id);
    if (s == nullptr || s->ended) return Napi::Boolean::New(env, false);
    s->ended = true;
    if (info.Length() > 1 && info[1].IsObject()) s->trailers = FieldsOf(info[1]);
    Wake(id, s);
    return Napi::Boolean::New(env, true);
  }

  // reset(stream, code): RST_STREAM.
  Napi::Value Reset(const Napi::CallbackInfo& info) {
    if (session_ != nullptr) {
      nghttp2_submit_rst_stream(session_, 0, info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Number>().Uint32Value());
    }
    return info.Env().Undefined();
  }

  // consume(stream, bytes): the application took these bytes in; the windows reopen by them.
  Napi::Value Consume(const Napi::CallbackInfo& info) {
    if (session_ != nullptr) {
      nghttp2_session_consume(session_, info[0].As<Napi::Number>().Int32Value(),
                              static_cast<size_t>(info[1].As<Napi::Number>().Int64Value()));
    }
    return info.Env().Undefined();
  }

  Napi::Value Queued(const Napi::CallbackInfo& info) {
    OutStream* s = session_ == nullptr ? nullptr : Find(info[0].As<Napi::Number>().Int32Value());
    return Napi::Number::New(info.Env(), s == nullptr ? 0 : static_cast<double>(s->queued));
  }

  Napi::Value Ping(const Napi::CallbackInfo& info) {
    const int rv = session_ == nullptr ? -1 : nghttp2_submit_ping(session_, 0, nullptr);
    return Napi::Boolean::New(info.Env(), rv == 0);
  }

  // goaway(code, opaque?, lastStreamId?): GOAWAY naming the last stream processed (or given).
  Napi::Value Goaway(const Napi::CallbackInfo& info) {
    if (session_ == nullptr) return info.Env().Undefined();
    const uint32_t code = info[0].As<Napi::Number>().Uint32Value();
    const uint8_t* data = nullptr;
    size_t len = 0;
    if (info.Length() > 1 && info[1].IsTypedArray()) {
      auto b = info[1].As<Napi::Uint8Array>();
      data = b.Data();
      len = b.ByteLength();
    }
    const int32_t last = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().Int32Value()
                                                                 : nghttp2_session_get_last_proc_stream_id(session_);
    nghttp2_submit_goaway(session_, 0, last, code, data, len);
    return info.Env().Undefined();
  }

  Napi::Value SetWindow(const Napi::CallbackInfo& info) {
    if (session_ != nullptr) nghttp2_session_set_local_window_size(session_, 0, 0, info[0].As<Napi::Number>().Int32Value());
    return info.Env().Undefined();
  }

  // wantIo(): 0 when nghttp2 neither expects to read nor has anything to write (the connection
  // can close), else 1 (read) | 2 (write).
  Napi::Value WantIo(const Napi::CallbackInfo& info) {
    if (session_ == nullptr) return Napi::Number::New(info.Env(), 0);
    return Napi::Number::New(info.Env(), (nghttp2_session_want_read(session_) ? 1 : 0) | (nghttp2_session_want_write(session_) ? 2 : 0));
  }

  // flush(out): what there is to write: its length when it fits in `out` (copied there; 0 when
  // there is nothing), else the bytes in a buffer of their own. The streams that closed
  // meanwhile are kClose events in the bound array.
  Napi::Value Flush(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Value bytes = Napi::Number::New(env, 0);
    if (session_ != nullptr) {
      out_bytes_.clear();
      // Bounded per call, so a large answer neither sits whole in this buffer nor in the
      // socket's queue: the rest is taken when the socket drains.
      while (out_bytes_.size() < kFlushBytes) {
        const uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(session_, &data);
        if (n <= 0) break;
        out_bytes_.insert(out_bytes_.end(), data, data + n);
      }
      if (!out_bytes_.empty()) {
        Napi::Uint8Array out = info.Length() > 0 && info[0].IsTypedArray() ? info[0].As<Napi::Uint8Array>() : Napi::Uint8Array();
        if (!out.IsEmpty() && out.ByteLength() >= out_bytes_.size()) {
          std::memcpy(out.Data(), out_bytes_.data(), out_bytes_.size());
          bytes = Napi::Number::New(env, static_cast<double>(out_bytes_.size()));
        } else {
          bytes = Napi::Buffer<uint8_t>::Copy(env, out_bytes_.data(), out_bytes_.size());
        }
      }
      if (out_bytes_.capacity() > 2 * kFlushBytes) out_bytes_ = std::vector<uint8_t>();
    }
    if (!evJs_.IsEmpty()) Deliver();
    return bytes;
  }

  // answer(stream, headers, message, trailers): a unary answer in one call: the response
  // headers, the message framed as gRPC frames it (flag 0, 4-byte big-endian length) in bytes
  // of the stream's own, and the end with the trailers. false when the stream is gone.
  Napi::Value Answer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const int32_t id = info[0].As<Napi::Number>().Int32Value();
    if (session_ == nullptr || out_.count(id) != 0 || nghttp2_session_get_stream_user_data(session_, id) == nullptr) {
      return Napi::Boolean::New(env, false);
    }
    OutStream* made = nullptr;
    if (SubmitWithBody(id, *FieldsOf(info[1]), &made) != 0) return Napi::Boolean::New(env, false);
    auto message = info[2].As<Napi::Uint8Array>();
    const size_t length = message.ByteLength();
    OutStream& s = *made;
    Chunk& c = s.chunks.emplace_back();
    c.owned.resize(5 + length);
    c.owned[0] = 0;
    c.owned[1] = static_cast<uint8_t>(length >> 24);
    c.owned[2] = static_cast<uint8_t>(length >> 16);
    c.owned[3] = static_cast<uint8_t>(length >> 8);
    c.owned[4] = static_cast<uint8_t>(length);
    if (length > 0) std::memcpy(c.owned.data() + 5, message.Data(), length);
    c.data = c.owned.data();
    c.length = c.owned.size();
    s.queued = c.length;
    s.ended = true;
    s.trailers = FieldsOf(info[3]);
    return Napi::Boolean::New(env, true);
  }

  Napi::Value Destroy(const Napi::CallbackInfo& info) {
    Free();
    return info.Env().Undefined();
  }

  void Free() {
    if (session_ != nullptr) {
      nghttp2_session* s = session_;
      session_ = nullptr;
      nghttp2_session_del(s);
    }
    out_.clear();
    ev_.clear();
    evStarts_.clear();
    evTaken_ = 0;
    objCount_ = 0;
    stringKeys_.clear();
    stringsJs_.Reset();
  }

  nghttp2_session* session_ = nullptr;
  std::unordered_map<int32_t, OutStream> out_;
  std::vector<uint8_t> out_bytes_;
  // Events not yet handed to JavaScript (fields; where each record starts; how many were taken).
  std::vector<double> ev_;
  std::vector<size_t> evStarts_;
  size_t evTaken_ = 0;
  uint32_t objCount_ = 0;  // objects put in objsJs_ for the events in ev_
  Napi::Reference<Napi::Float64Array> evJs_;
  Napi::Reference<Napi::Array> objsJs_;
  // Valid only inside receive():
  Napi::Env env_ = Napi::Env(nullptr);
  const uint8_t* inBase_ = nullptr;
  size_t inLength_ = 0;
  Fields block_;  // the header block arriving
  size_t headerBytes_ = 0;
  // Kept across calls:
  Fields last_;  // the connection's last request header block
  std::vector<std::string> stringKeys_;
  Napi::Reference<Napi::Array> stringsJs_;
  bool inRequest_ = false;
};

}  // namespace

void InitH2Session(Napi::Env env, Napi::Object exports) {
  exports.Set("H2Session", H2Session::Define(env));
  exports.Set("H2HeaderBlock", H2HeaderBlock::Define(env));
}

}  // namespace tritium
