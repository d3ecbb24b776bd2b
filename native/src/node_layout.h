#pragma once
#include <napi.h>

namespace tritium {
void InitLayout(Napi::Env env, Napi::Object exports);
}
