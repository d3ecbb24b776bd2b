/**
 * @module frontends/http/handlers/shared-memory
 * System and CUDA shared-memory endpoints over HTTP. The registry and its rules are the core's
 * (core/extensions/shared-memory.ts); this module decodes Triton's JSON bodies and renders the
 * status array.
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { Errors } from '../../../core/errors.js';
import { cudaSharedMemoryRegister, cudaSharedMemoryStatus } from '../../../core/extensions/shared-memory.js';
import type { HttpContext } from '../context.js';
import { sendEmpty, sendError, sendJson } from '../reply.js';
import { readJsonObject } from './json-body.js';

type Action = 'status' | 'register' | 'unregister';

export async function handleSharedMemory(
  ctx: HttpContext,
  req: HttpRequest,
  res: HttpResponse,
  memory: 'system' | 'cuda',
  region: string,
  action: Action,
): Promise<void> {
  try {
    if (memory === 'cuda') {
      if (action === 'status') sendJson(res, 200, JSON.stringify(cudaSharedMemoryStatus(region)));
      else if (action === 'register') cudaSharedMemoryRegister(region);
      else sendEmpty(res, 200);
      return;
    }
    const shm = ctx.core.systemSharedMemory;
    switch (action) {
      case 'status': {
        const regions = shm.status(region).map((r) => ({ name: r.name, key: r.key, offset: r.offset, byte_size: r.byteSize }));
        sendJson(res, 200, JSON.stringify(regions));
        return;
      }
      case 'register': {
        const body = await readJsonObject(ctx, req);
        if (body === undefined) throw Errors.jsonEmpty();
        const key = body.key;
        if (key === undefined) throw Errors.shmRegisterFieldMissing('key');
        if (typeof key !== 'string') throw Errors.jsonNotString();
        const offset = body.offset ?? 0;
        if (body.byte_size === undefined) throw Errors.shmRegisterFieldMissing('byte_size');
        if (!isUint(offset) || !isUint(body.byte_size)) throw Errors.jsonNotUnsigned();
        shm.register(region, key, Number(offset), Number(body.byte_size));
        sendEmpty(res, 200);
        return;
      }
      case 'unregister':
        shm.unregister(region);
        sendEmpty(res, 200);
        return;
    }
  } catch (err) {
    sendError(res, err);
  }
}

function isUint(v: unknown): boolean {
  return (typeof v === 'number' && Number.isInteger(v) && v >= 0) || (typeof v === 'bigint' && v >= 0n);
}
