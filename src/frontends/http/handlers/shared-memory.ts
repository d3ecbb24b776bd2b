/**
 * @module frontends/http/handlers/shared-memory
 * System and CUDA shared-memory endpoints. Client shared memory is NOT supported yet: status
 * lists no regions, register answers UNSUPPORTED (501, as current Triton does without
 * `--allow-client-shm`), and unregister succeeds as a no-op, so perf_analyzer's start-up
 * "unregister all" and clean-up calls do not fail.
 */
import type { HttpResponse } from '../wire/exchange.js';
import { ErrorCode, TritonError } from '../../../core/errors.js';
import { sendEmpty, sendError, sendJson } from '../reply.js';

export function handleSharedMemory(res: HttpResponse, memory: 'system' | 'cuda', region: string, action: 'status' | 'register' | 'unregister'): void {
  const kind = memory === 'system' ? 'system' : 'cuda';
  switch (action) {
    case 'status':
      if (region === '') sendJson(res, 200, '[]');
      else sendError(res, new TritonError(ErrorCode.NOT_FOUND, `Unable to find ${kind} shared memory region: '${region}'`));
      return;
    case 'register':
      if (region === '') {
        sendError(res, new TritonError(ErrorCode.INVALID_ARG, `'region name' is necessary to register ${kind} shared memory region`));
        return;
      }
      sendError(
        res,
        new TritonError(
          ErrorCode.UNSUPPORTED,
          `failed to register ${kind} shared memory region '${region}': client shared memory is not supported by this server`,
        ),
      );
      return;
    case 'unregister':
      sendEmpty(res, 200);
      return;
  }
}
