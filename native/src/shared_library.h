#pragma once
#include <napi.h>

namespace tritium {
void InitSharedLibrary(Napi::Env env, Napi::Object exports);
}
