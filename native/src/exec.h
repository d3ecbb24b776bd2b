#pragma once
#include <napi.h>

namespace tritium {
void InitExec(Napi::Env env, Napi::Object exports);
}
