/**
 * @module frontends/http/handlers/shared-memory
 * System and CUDA shared-memory endpoints over HTTP; what they answer is the core's
 * (core/extensions/shared-memory.ts: client shared memory is not supported yet).
 */
import type { HttpResponse } from '../wire/exchange.js';
import { sharedMemoryRegister, sharedMemoryStatus } from '../../../core/extensions/shared-memory.js';
import { sendEmpty, sendError, sendJson } from '../reply.js';

export function handleSharedMemory(res: HttpResponse, memory: 'system' | 'cuda', region: string, action: 'status' | 'register' | 'unregister'): void {
  try {
    switch (action) {
      case 'status':
        sendJson(res, 200, JSON.stringify(sharedMemoryStatus(memory, region)));
        return;
      case 'register':
        sharedMemoryRegister(memory, region);
        return;
      case 'unregister':
        sendEmpty(res, 200);
        return;
    }
  } catch (err) {
    sendError(res, err);
  }
}
