#pragma once
#include <napi.h>

namespace tritium {
void InitArena(Napi::Env env, Napi::Object exports);
}
