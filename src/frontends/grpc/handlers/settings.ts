/**
 * @module frontends/grpc/handlers/settings
 * TraceSetting (a static stub: tracing is off and stays off) and LogSettings (read and update
 * the shared log-settings store, then return the current settings).
 */
import { create } from '@bufbuild/protobuf';
import { ErrorCode, TritonError } from '../../../core/errors.js';
import type { LogSettingsRequest, TraceSettingRequest } from '../../../generated/grpc_service_pb.js';
import { LogSettingsResponse_SettingValueSchema, LogSettingsResponseSchema, TraceSettingResponseSchema } from '../../../generated/grpc_service_pb.js';
import type { LogSettingsView } from '../../../core/logger.js';
import type { GrpcContext } from '../context.js';

const TRACE_SETTINGS: Record<string, string[]> = {
  trace_level: ['OFF'],
  trace_rate: ['1000'],
  trace_count: ['-1'],
  log_frequency: ['0'],
  trace_file: [''],
  trace_mode: ['triton'],
};

export function traceSetting(ctx: GrpcContext, req: TraceSettingRequest) {
  if (req.modelName !== '') ctx.core.resolveModel(req.modelName, '');
  const file = req.settings['trace_file'];
  if (file !== undefined && file.value.length > 0) {
    throw new TritonError(ErrorCode.UNSUPPORTED, 'trace_file updating through API is not supported');
  }
  const settings: Record<string, { value: string[] }> = {};
  for (const [k, v] of Object.entries(TRACE_SETTINGS)) settings[k] = { value: v };
  return create(TraceSettingResponseSchema, { settings });
}

const invalid = (m: string) => new TritonError(ErrorCode.INVALID_ARG, m);

export function logSettings(ctx: GrpcContext, req: LogSettingsRequest) {
  const keys = Object.keys(req.settings);
  if (keys.length > 0) ctx.logSettings.update(validate(req, ctx.logSettings.get()));
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

function validate(req: LogSettingsRequest, current: LogSettingsView): Partial<LogSettingsView> {
  const patch: Partial<LogSettingsView> = {};
  for (const key of Object.keys(req.settings)) {
    const c = req.settings[key]!.parameterChoice;
    if (c.case === undefined) continue; // an unset value leaves the setting alone
    switch (key) {
      case 'log_file':
        if (c.case !== 'stringParam') throw invalid("expect string for 'log_file'");
        if (c.value !== current.log_file) {
          throw new TritonError(ErrorCode.UNSUPPORTED, 'changing the log file over the network is not supported');
        }
        break;
      case 'log_info':
      case 'log_warning':
      case 'log_error':
        if (c.case !== 'boolParam') throw invalid(`expect boolean for '${key}'`);
        patch[key] = c.value;
        break;
      case 'log_verbose_level':
        if (c.case !== 'uint32Param') throw invalid("expect unsigned integer for 'log_verbose_level'");
        patch.log_verbose_level = c.value;
        break;
      case 'log_format':
        if (c.case !== 'stringParam') throw invalid("expect string for 'log_format'");
        if (c.value !== 'default' && c.value !== 'ISO8601') throw invalid(`invalid argument for --log_format, got: ${c.value}`);
        patch.log_format = c.value;
        break;
      default:
        throw invalid(`unknown log setting '${key}'`);
    }
  }
  return patch;
}
