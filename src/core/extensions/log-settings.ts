/**
 * @module core/extensions/log-settings
 * The logging extension's update rule, shared by HTTP and gRPC: which settings may change, what
 * type each must have, and the refusals (Triton 2.51's behaviour, compared on both protocols):
 * - `log_file` is never changed over the network: naming it at all is refused;
 * - a value of the wrong type is refused (Triton words this per protocol; see docs/errors.md);
 * - `log_format` must be `default` or `ISO8601`;
 * - keys Triton does not know are ignored.
 * A frontend decodes its wire form into `SettingValue`s and applies the returned patch.
 */
import { Errors } from '../errors.js';
import type { LogSettingsView } from '../logger.js';

/** A setting as it arrived: the wire type it had, or `other` (any other type, or no value). */
export type SettingValue = { type: 'bool'; value: boolean } | { type: 'string'; value: string } | { type: 'uint'; value: number | bigint } | { type: 'other' };

export type Protocol = 'http' | 'grpc';

/** The validated partial update for `settings` (absent keys are left out by the frontend). */
export function logSettingsPatch(protocol: Protocol, settings: ReadonlyMap<string, SettingValue>): Partial<LogSettingsView> {
  const wrongType = (key: string, want: 'bool' | 'uint' | 'string') =>
    protocol === 'http'
      ? Errors.jsonValueType(want === 'bool' ? 'boolean' : want === 'uint' ? 'unsigned-integer' : 'string')
      : Errors.logSettingTypeGrpc(key, want === 'bool' ? 'boolean' : want === 'uint' ? 'int32' : 'string');
  const patch: Partial<LogSettingsView> = {};
  for (const [key, v] of settings) {
    switch (key) {
      case 'log_file':
        throw Errors.logFileUpdate();
      case 'log_info':
      case 'log_warning':
      case 'log_error':
        if (v.type !== 'bool') throw wrongType(key, 'bool');
        patch[key] = v.value;
        break;
      case 'log_verbose_level':
        if (v.type !== 'uint') throw wrongType(key, 'uint');
        patch.log_verbose_level = verboseLevel(v.value);
        break;
      case 'log_format':
        if (v.type !== 'string') throw wrongType(key, 'string');
        if (v.value !== 'default' && v.value !== 'ISO8601') {
          throw protocol === 'http' ? Errors.logFormatHttp(v.value) : Errors.logFormatGrpc(v.value);
        }
        patch.log_format = v.value;
        break;
      default:
        break; // Triton ignores settings it does not know, on both protocols.
    }
  }
  return patch;
}

/**
 * The level Triton keeps for an unsigned value: it stores it in an int32 and reports a negative
 * one as 0 (tritonserver 2.51, both protocols: 2^32 + 1 gives 1, 2^31 and 2^32 - 1 give 0).
 */
function verboseLevel(v: number | bigint): number {
  const level = Number(BigInt.asIntN(32, BigInt(v)));
  return Math.max(level, 0);
}
