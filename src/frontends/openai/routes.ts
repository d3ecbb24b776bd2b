/**
 * @module frontends/openai/routes
 * The OpenAI-compatible paths (`/v1/...`) and the API group each belongs to for
 * `--openai-restricted-api`, with the groups Triton's OpenAI frontend names: `inference`
 * (completions), `model-repository` (the model list) and `health`. Its fourth, `metrics`, has
 * no path here: metrics are served on --metrics-port.
 */
import { decode } from '../http/router.js';

export const OPENAI_API_GROUPS = ['inference', 'model-repository', 'health'] as const;
export type OpenAiApiGroup = (typeof OPENAI_API_GROUPS)[number];

export type OpenAiRoute =
  | { kind: 'models' }
  | { kind: 'model'; model: string }
  | { kind: 'completions'; chat: boolean }
  | { kind: 'health' }
  | { kind: 'not-found' };

/** The route of a `/v1/...` target (query ignored); `health` only where the OpenAI port serves it. */
export function matchOpenAiRoute(url: string, ownPort: boolean): OpenAiRoute {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path === '/v1/models') return { kind: 'models' };
  if (path === '/v1/completions') return { kind: 'completions', chat: false };
  if (path === '/v1/chat/completions') return { kind: 'completions', chat: true };
  if (ownPort && path === '/health/ready') return { kind: 'health' };
  // Model names may carry `/` (Hugging Face style ids), so the rest of the path is the name.
  const m = /^\/v1\/models\/(.+)$/.exec(path);
  if (m !== null) return { kind: 'model', model: decode(m[1]!) };
  return { kind: 'not-found' };
}

/** Whether a target is one of the OpenAI paths (the KServe router never sees those). */
export function isOpenAiPath(url: string): boolean {
  return url.startsWith('/v1/') || url === '/v1';
}

export function methodOf(route: OpenAiRoute): string | undefined {
  switch (route.kind) {
    case 'models':
    case 'model':
    case 'health':
      return 'GET';
    case 'completions':
      return 'POST';
    default:
      return undefined;
  }
}

export function groupOf(route: OpenAiRoute): OpenAiApiGroup | undefined {
  switch (route.kind) {
    case 'models':
    case 'model':
      return 'model-repository';
    case 'completions':
      return 'inference';
    case 'health':
      return 'health';
    default:
      return undefined;
  }
}
