#pragma once
#include <napi.h>

namespace tritium {
void InitWake(Napi::Env env, Napi::Object exports);
}
