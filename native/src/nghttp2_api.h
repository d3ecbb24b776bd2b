// The part of libnghttp2's public C API that h2_session.cc uses, declared here because Node
// ships no nghttp2 header: the library itself is the one inside the running Node binary, which
// exports its symbols (as undici reuses Node's llhttp). Types and values follow nghttp2's
// documented, stable ABI (nghttp2 1.x); only what the server side of gRPC needs is declared.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

extern "C" {

typedef struct nghttp2_session nghttp2_session;
typedef struct nghttp2_session_callbacks nghttp2_session_callbacks;
typedef struct nghttp2_option nghttp2_option;

typedef struct {
  size_t length;
  int32_t stream_id;
  uint8_t type;
  uint8_t flags;
  uint8_t reserved;
} nghttp2_frame_hd;

typedef struct {
  nghttp2_frame_hd hd;
  int32_t last_stream_id;
  uint32_t error_code;
  uint8_t* opaque_data;
  size_t opaque_data_len;
  uint8_t reserved;
} nghttp2_goaway;

// Every member of the frame union starts with its frame header; only the header and GOAWAY's
// fields are read here, so the union stays opaque.
typedef union nghttp2_frame nghttp2_frame;

typedef struct {
  uint8_t* name;
  uint8_t* value;
  size_t namelen;
  size_t valuelen;
  uint8_t flags;
} nghttp2_nv;

typedef struct {
  int32_t settings_id;
  uint32_t value;
} nghttp2_settings_entry;

typedef union {
  int fd;
  void* ptr;
} nghttp2_data_source;

typedef ssize_t (*nghttp2_data_source_read_callback)(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                                                     uint32_t* data_flags, nghttp2_data_source* source, void* user_data);

typedef struct {
  nghttp2_data_source source;
  nghttp2_data_source_read_callback read_callback;
} nghttp2_data_provider;

typedef int (*nghttp2_on_begin_headers_callback)(nghttp2_session*, const nghttp2_frame*, void*);
typedef int (*nghttp2_on_header_callback)(nghttp2_session*, const nghttp2_frame*, const uint8_t* name, size_t namelen, const uint8_t* value,
                                          size_t valuelen, uint8_t flags, void*);
typedef int (*nghttp2_on_frame_recv_callback)(nghttp2_session*, const nghttp2_frame*, void*);
typedef int (*nghttp2_on_data_chunk_recv_callback)(nghttp2_session*, uint8_t flags, int32_t stream_id, const uint8_t* data, size_t len,
                                                   void*);
typedef int (*nghttp2_on_stream_close_callback)(nghttp2_session*, int32_t stream_id, uint32_t error_code, void*);

int nghttp2_session_callbacks_new(nghttp2_session_callbacks** callbacks_ptr);
void nghttp2_session_callbacks_del(nghttp2_session_callbacks* callbacks);
void nghttp2_session_callbacks_set_on_begin_headers_callback(nghttp2_session_callbacks*, nghttp2_on_begin_headers_callback);
void nghttp2_session_callbacks_set_on_header_callback(nghttp2_session_callbacks*, nghttp2_on_header_callback);
void nghttp2_session_callbacks_set_on_frame_recv_callback(nghttp2_session_callbacks*, nghttp2_on_frame_recv_callback);
void nghttp2_session_callbacks_set_on_data_chunk_recv_callback(nghttp2_session_callbacks*, nghttp2_on_data_chunk_recv_callback);
void nghttp2_session_callbacks_set_on_stream_close_callback(nghttp2_session_callbacks*, nghttp2_on_stream_close_callback);

int nghttp2_option_new(nghttp2_option** option_ptr);
void nghttp2_option_del(nghttp2_option* option);
void nghttp2_option_set_no_auto_window_update(nghttp2_option* option, int val);

int nghttp2_session_server_new2(nghttp2_session** session_ptr, const nghttp2_session_callbacks* callbacks, void* user_data,
                                const nghttp2_option* option);
void nghttp2_session_del(nghttp2_session* session);
ssize_t nghttp2_session_mem_recv(nghttp2_session* session, const uint8_t* in, size_t inlen);
ssize_t nghttp2_session_mem_send(nghttp2_session* session, const uint8_t** data_ptr);
int nghttp2_session_want_read(nghttp2_session* session);
int nghttp2_session_want_write(nghttp2_session* session);
int nghttp2_session_consume(nghttp2_session* session, int32_t stream_id, size_t size);
int nghttp2_session_set_local_window_size(nghttp2_session* session, uint8_t flags, int32_t stream_id, int32_t window_size);
int nghttp2_session_resume_data(nghttp2_session* session, int32_t stream_id);
int nghttp2_session_get_last_proc_stream_id(nghttp2_session* session);
void* nghttp2_session_get_stream_user_data(nghttp2_session* session, int32_t stream_id);
int nghttp2_session_set_stream_user_data(nghttp2_session* session, int32_t stream_id, void* stream_user_data);

int nghttp2_submit_settings(nghttp2_session* session, uint8_t flags, const nghttp2_settings_entry* iv, size_t niv);
int nghttp2_submit_response(nghttp2_session* session, int32_t stream_id, const nghttp2_nv* nva, size_t nvlen,
                            const nghttp2_data_provider* data_prd);
int nghttp2_submit_trailer(nghttp2_session* session, int32_t stream_id, const nghttp2_nv* nva, size_t nvlen);
int nghttp2_submit_rst_stream(nghttp2_session* session, uint8_t flags, int32_t stream_id, uint32_t error_code);
int nghttp2_submit_ping(nghttp2_session* session, uint8_t flags, const uint8_t* opaque_data);
int nghttp2_submit_goaway(nghttp2_session* session, uint8_t flags, int32_t last_stream_id, uint32_t error_code, const uint8_t* opaque_data,
                          size_t opaque_data_len);
const char* nghttp2_strerror(int lib_error_code);

}  // extern "C"

namespace nghttp2 {
constexpr uint8_t kData = 0x0;
constexpr uint8_t kHeaders = 0x1;
constexpr uint8_t kPing = 0x6;
constexpr uint8_t kGoaway = 0x7;
constexpr uint8_t kFlagEndStream = 0x1;
constexpr uint8_t kFlagAck = 0x1;
constexpr uint8_t kNvFlagNone = 0;
constexpr uint32_t kDataFlagEof = 0x1;
constexpr uint32_t kDataFlagNoEndStream = 0x2;
constexpr int32_t kSettingsMaxConcurrentStreams = 0x3;
constexpr int32_t kSettingsInitialWindowSize = 0x4;
constexpr int32_t kSettingsMaxHeaderListSize = 0x6;
constexpr int kErrDeferred = -508;
constexpr int kErrTemporalCallbackFailure = -521;
constexpr int kErrCallbackFailure = -902;
}  // namespace nghttp2
