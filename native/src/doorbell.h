#pragma once
#include <napi.h>

namespace tritium {
void InitDoorbell(Napi::Env env, Napi::Object exports);
}
