/**
 * @module frontends/http/context
 * What every handler gets besides the request: the core and the server options.
 */
import type { ApiGroup, Restriction } from '../restricted-api.js';
import type { ServerCore } from '../../core/server-core.js';
import type { LogSettingsStore } from '../../core/logger.js';
import type { BodyBudget } from '../body-budget.js';
import type { OpenAiSettings } from '../openai/settings.js';

export interface HttpLogger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export interface HttpContext {
  readonly core: ServerCore;
  /** `--http-max-input-size`: cap on a body, compressed or inflated. */
  readonly maxInputSize: number;
  /** `--http-max-json-output-size`: the largest output (tensor bytes) sent as JSON. */
  readonly maxJsonOutputSize: number;
  /** `--http-max-body-memory`: what all request bodies may hold at once. */
  readonly bodyBudget: BodyBudget;
  readonly logger?: HttpLogger;
  readonly logSettings: LogSettingsStore;
  /** `--http-header-forward-pattern`: headers forwarded as request parameters. */
  readonly headerForward?: RegExp;
  /** `--http-restricted-api`: the header each restricted API group needs. */
  readonly restricted?: ReadonlyMap<ApiGroup, Restriction>;
  /** The OpenAI endpoints' settings (frontends/openai/); absent: their defaults. */
  readonly openai?: OpenAiSettings;
}
