{
  "targets": [
    {
      "target_name": "tritium_native",
      "sources": ["src/addon.cc", "src/exec.cc", "src/fd_passing.cc", "src/h2_session.cc", "src/listen_socket.cc", "src/node_arena.cc", "src/node_layout.cc", "src/node_ring.cc", "src/shared_library.cc", "src/shm.cc", "src/socket_write.cc", "src/wake.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags_cc": ["-std=c++17", "-O2", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "cflags_cc!": ["-fno-exceptions"],
      "conditions": [
        ["OS=='linux'", { "libraries": ["-ldl"] }],
        ["OS=='mac'", { "xcode_settings": { "CLANG_CXX_LANGUAGE_STANDARD": "c++17" } }]
      ]
    }
  ]
}
