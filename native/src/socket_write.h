#pragma once
#include <napi.h>

namespace tritium {
void InitSocketWrite(Napi::Env env, Napi::Object exports);
}
