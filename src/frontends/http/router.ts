/**
 * @module frontends/http/router
 * Triton's routing: whole-path matches on the path alone (query string ignored), one pattern
 * per endpoint family. A path no pattern matches is 404; a matched path with the wrong method
 * is 405 (decided by the dispatcher from `allowedMethods`).
 */

import type { ApiGroup } from '../restricted-api.js';

export type ModelAction = '' | 'infer' | 'generate' | 'generate_stream' | 'ready' | 'config' | 'stats' | 'trace/setting';

export type Route =
  | { kind: 'server-metadata' }
  | { kind: 'health'; probe: 'live' | 'ready' }
  | { kind: 'all-stats' }
  | { kind: 'logging' }
  | { kind: 'model'; model: string; version: string; action: ModelAction }
  | { kind: 'repository-index'; repository: string }
  | { kind: 'repository-control'; repository: string; model: string; action: 'load' | 'unload' }
  | { kind: 'shared-memory'; memory: 'system' | 'cuda'; region: string; action: 'status' | 'register' | 'unregister' }
  | { kind: 'trace' };

// Same shapes as Triton's patterns: names are one path segment, versions are digits.
const SERVER = /^\/v2(?:\/health\/(live|ready))?$/;
const MODEL = /^\/v2\/models\/([^/]+)(?:\/versions\/([0-9]+))?(?:\/(infer|generate|generate_stream|ready|config|stats|trace\/setting))?$/;
const REPOSITORY = /^\/v2\/repository(?:\/([^/]+))?\/(index|models\/([^/]+)\/(load|unload))$/;
const SHARED_MEMORY = /^\/v2\/(system|cuda)sharedmemory(?:\/region\/([^/]+))?\/(status|register|unregister)$/;

// The last target matched and its route: a client sends the same URL request after request, and
// matching it again allocated a match array and a route each time. Routes are only read.
let lastUrl = '';
let lastRoute: Route | undefined;

/** Maps a request target (path plus optional query) to its route, or undefined for 404. */
export function matchRoute(url: string): Route | undefined {
  if (url === lastUrl) return lastRoute;
  const route = match(url);
  lastUrl = url;
  lastRoute = route;
  return route;
}

function match(url: string): Route | undefined {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (!path.startsWith('/v2')) return undefined;

  // Checked before the model pattern, so a model literally named "stats" is shadowed (as in Triton).
  if (path === '/v2/models/stats') return { kind: 'all-stats' };
  if (path === '/v2/logging') return { kind: 'logging' };
  if (path === '/v2/trace/setting') return { kind: 'trace' };

  let m = MODEL.exec(path);
  if (m !== null) {
    return { kind: 'model', model: decode(m[1]!), version: m[2] ?? '', action: (m[3] ?? '') as ModelAction };
  }
  m = SERVER.exec(path);
  if (m !== null) {
    return m[1] === undefined ? { kind: 'server-metadata' } : { kind: 'health', probe: m[1] as 'live' | 'ready' };
  }
  m = REPOSITORY.exec(path);
  if (m !== null) {
    const repository = m[1] === undefined ? '' : decode(m[1]);
    if (m[2] === 'index') return { kind: 'repository-index', repository };
    return { kind: 'repository-control', repository, model: decode(m[3]!), action: m[4] as 'load' | 'unload' };
  }
  m = SHARED_MEMORY.exec(path);
  if (m !== null) {
    return {
      kind: 'shared-memory',
      memory: m[1] as 'system' | 'cuda',
      region: m[2] === undefined ? '' : decode(m[2]),
      action: m[3] as 'status' | 'register' | 'unregister',
    };
  }
  return undefined;
}

/** Clients percent-encode names (`tritonclient` quotes the model name); undo it when valid. */
export function decode(segment: string): string {
  if (segment.indexOf('%') < 0) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const GET = ['GET'] as const;
const POST = ['POST'] as const;
const GET_POST = ['GET', 'POST'] as const;

/** The API group a route belongs to, for --http-restricted-api (frontends/restricted-api.ts). */
export function apiGroupOf(route: Route): ApiGroup {
  switch (route.kind) {
    case 'server-metadata':
      return 'metadata';
    case 'health':
      return 'health';
    case 'all-stats':
      return 'statistics';
    case 'logging':
      return 'logging';
    case 'trace':
      return 'trace';
    case 'repository-index':
    case 'repository-control':
      return 'model-repository';
    case 'shared-memory':
      return 'shared-memory';
    case 'model':
      switch (route.action) {
        case '':
          return 'metadata';
        case 'ready':
          return 'health';
        case 'config':
          return 'model-config';
        case 'stats':
          return 'statistics';
        case 'trace/setting':
          return 'trace';
        default:
          return 'inference';
      }
  }
}

/** The methods a route answers; anything else gets 405. */
export function allowedMethods(route: Route): readonly string[] {
  switch (route.kind) {
    case 'server-metadata':
    case 'health':
    case 'all-stats':
      return GET;
    case 'logging':
    case 'trace':
      return GET_POST;
    case 'repository-index':
    case 'repository-control':
      return POST;
    case 'shared-memory':
      return route.action === 'status' ? GET : POST;
    case 'model':
      switch (route.action) {
        case 'infer':
        case 'generate':
        case 'generate_stream':
          return POST;
        case 'trace/setting':
          return GET_POST;
        default:
          return GET;
      }
  }
}
