/**
 * @module frontends/http/dispatch
 * Sends each request to its handler: route → method check → handler.
 */
import type { HttpRequest, HttpResponse } from './wire/exchange.js';
import type { HttpContext } from './context.js';
import { handleGenerate } from './handlers/generate.js';
import { handleHealth } from './handlers/health.js';
import { handleInfer } from './handlers/infer.js';
import { handleLogging } from './handlers/logging.js';
import { handleModelConfig, handleModelMetadata, handleModelReady, handleServerMetadata } from './handlers/metadata.js';
import { handleRepositoryControl, handleRepositoryIndex } from './handlers/repository.js';
import { handleSharedMemory } from './handlers/shared-memory.js';
import { handleStats } from './handlers/stats.js';
import { handleTrace } from './handlers/trace.js';
import { sendError, sendJson, sendMethodNotAllowed, sendNotFound } from './reply.js';
import { allowedMethods, apiGroupOf, matchRoute } from './router.js';
import { missingHeader } from '../restricted-api.js';
import { Errors } from '../../core/errors.js';
import { dispatchOpenAi } from '../openai/dispatch.js';
import { isOpenAiPath } from '../openai/routes.js';

export function dispatch(ctx: HttpContext, req: HttpRequest, res: HttpResponse): void {
  // The OpenAI paths (/v1/...) share the port; --openai-port serves only them.
  if (ctx.openai?.ownPort === true || isOpenAiPath(req.url ?? '/')) {
    dispatchOpenAi(ctx, req, res);
    return;
  }
  const route = matchRoute(req.url ?? '/');
  if (route === undefined) {
    sendNotFound(res);
    return;
  }
  if (!allowedMethods(route).includes(req.method ?? '')) {
    sendMethodNotAllowed(res);
    return;
  }
  if (ctx.restricted !== undefined) {
    const header = missingHeader(ctx.restricted.get(apiGroupOf(route)), req.headers);
    if (header !== undefined) {
      // Triton answers 403 here, not the status its error code maps to.
      sendJson(res, 403, JSON.stringify({ error: Errors.apiRestricted('API', header).message }));
      return;
    }
  }
  try {
    switch (route.kind) {
      case 'health':
        return handleHealth(ctx, res, route.probe);
      case 'server-metadata':
        return handleServerMetadata(ctx, res);
      case 'all-stats':
        return handleStats(ctx, res);
      case 'logging':
        return void handleLogging(ctx, req, res);
      case 'trace':
        return void handleTrace(ctx, req, res);
      case 'repository-index':
        return void handleRepositoryIndex(ctx, req, res);
      case 'repository-control':
        return void handleRepositoryControl(ctx, req, res, route.repository, route.model, route.action);
      case 'shared-memory':
        return void handleSharedMemory(ctx, req, res, route.memory, route.region, route.action);
      case 'model':
        switch (route.action) {
          case 'infer':
            return handleInfer(ctx, req, res, route.model, route.version);
          case '':
            return handleModelMetadata(ctx, res, route.model, route.version);
          case 'ready':
            return handleModelReady(ctx, res, route.model, route.version);
          case 'config':
            return handleModelConfig(ctx, res, route.model, route.version);
          case 'stats':
            return handleStats(ctx, res, route.model, route.version);
          case 'trace/setting':
            return void handleTrace(ctx, req, res, route.model);
          case 'generate':
          case 'generate_stream':
            return handleGenerate(ctx, req, res, route.model, route.version, route.action === 'generate_stream');
        }
    }
  } catch (err) {
    // Handlers answer their own errors; this is the net for a bug in one of them.
    ctx.logger?.error(`HTTP ${req.method} ${req.url} failed: ${String(err)}`);
    sendError(res, err);
  }
}
