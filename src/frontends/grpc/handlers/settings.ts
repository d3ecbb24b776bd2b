/**
 * @module frontends/grpc/handlers/settings
 * TraceSetting and LogSettings: the wire forms of the core's trace and logging extensions
 * (core/extensions/), which hold the rules both protocols share.
 */
import { create } from '@bufbuild/protobuf';
import { checkTraceModel } from '../../../core/extensions/trace-settings.js';
import { logSettingsPatch, type SettingValue } from '../../../core/extensions/log-settings.js';
import type { LogSettingsRequest, TraceSettingRequest } from '../../../generated/grpc_service_pb.js';
import { LogSettingsResponse_SettingValueSchema, LogSettingsResponseSchema, TraceSettingResponseSchema } from '../../../generated/grpc_service_pb.js';
import type { GrpcContext } from '../context.js';

export function traceSetting(ctx: GrpcContext, req: TraceSettingRequest) {
  checkTraceModel(ctx.core, req.modelName);
  // gRPC refuses trace_file whenever the key is present, even with no value (as Triton does);
  // an empty value drops a model's override.
  const entries = Object.entries(req.settings).map(([k, v]): [string, string[] | null] =>
    k === 'trace_file' ? [k, v.value] : [k, v.value.length ? v.value : null],
  );
  if (entries.length > 0) ctx.core.tracer.settings.update(req.modelName, entries);
  const settings: Record<string, { value: string[] }> = {};
  const effective: Record<string, string[]> = ctx.core.tracer.settings.effective(req.modelName);
  for (const [k, v] of Object.entries(effective)) settings[k] = { value: [...v] };
  return create(TraceSettingResponseSchema, { settings });
}

export function logSettings(ctx: GrpcContext, req: LogSettingsRequest) {
  if (Object.keys(req.settings).length > 0) ctx.logSettings.update(logSettingsPatch('grpc', decode(req)));
  const s = ctx.logSettings.get();
  const bool = (value: boolean) => create(LogSettingsResponse_SettingValueSchema, { parameterChoice: { case: 'boolParam', value } });
  const str = (value: string) => create(LogSettingsResponse_SettingValueSchema, { parameterChoice: { case: 'stringParam', value } });
  const u32 = (value: number) => create(LogSettingsResponse_SettingValueSchema, { parameterChoice: { case: 'uint32Param', value } });
  return create(LogSettingsResponseSchema, {
    settings: {
      log_file: str(s.log_file),
      log_info: bool(s.log_info),
      log_warning: bool(s.log_warning),
      log_error: bool(s.log_error),
      log_verbose_level: u32(s.log_verbose_level),
      log_format: str(s.log_format),
    },
  });
}

/** The request's settings as the core's protocol-neutral values (an unset value is `other`). */
function decode(req: LogSettingsRequest): Map<string, SettingValue> {
  const out = new Map<string, SettingValue>();
  for (const [key, v] of Object.entries(req.settings)) {
    const c = v.parameterChoice;
    if (c.case === 'boolParam') out.set(key, { type: 'bool', value: c.value });
    else if (c.case === 'stringParam') out.set(key, { type: 'string', value: c.value });
    else if (c.case === 'uint32Param') out.set(key, { type: 'uint', value: c.value });
    else out.set(key, { type: 'other' });
  }
  return out;
}
