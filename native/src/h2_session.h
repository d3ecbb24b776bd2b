#pragma once
#include <napi.h>

namespace tritium {
void InitH2Session(Napi::Env env, Napi::Object exports);
}
