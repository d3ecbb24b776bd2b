#pragma once
#include <napi.h>

namespace tritium {
void InitRing(Napi::Env env, Napi::Object exports);
}
