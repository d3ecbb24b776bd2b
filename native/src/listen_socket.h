#pragma once
#include <napi.h>

namespace tritium {
void InitListenSocket(Napi::Env env, Napi::Object exports);
}
