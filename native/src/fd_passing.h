#pragma once
#include <napi.h>

namespace tritium {
void InitFdPassing(Napi::Env env, Napi::Object exports);
}
