#pragma once
#include <napi.h>

namespace tritium {
void InitShm(Napi::Env env, Napi::Object exports);
}
