/**
 * @module frontends/http/handlers/shared-memory
 * System and CUDA shared-memory endpoints over HTTP. The registry and its rules are the core's
 * (core/extensions/shared-memory.ts); this module decodes Triton's JSON bodies and renders the
 * status array.
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { Errors } from '../../../core/errors.js';
import { cudaSharedMemoryRegister, cudaSharedMemoryStatus } from '../../../core/extensions/shared-memory.js';
import { registerSystemRegion } from '../../shm-register.js';
import type { HttpContext } from '../context.js';
import { sendEmpty, sendError, sendJson } from '../reply.js';
import { jsonUint64, readJsonObject } from './json-body.js';

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
        const body = await readJsonObject(ctx, req, true);
        if (body === undefined) throw Errors.jsonEmpty();
        // Triton 2.51's order of checks: key, then offset (optional, but null is not absent),
        // then byte_size; a negative, fractional, float-written (64.0, 1e20) or 2^64 number is
        // not an unsigned integer to TritonJson, and Triton answers it with 500.
        const key = body.key;
        if (key === undefined) throw Errors.shmRegisterFieldMissing('key');
        if (typeof key !== 'string') throw Errors.jsonNotString();
        const offset = body.offset === undefined ? 0 : jsonUint64(body.offset);
        if (offset === undefined) throw Errors.jsonNotUnsigned();
        if (body.byte_size === undefined) throw Errors.shmRegisterFieldMissing('byte_size');
        const byteSize = jsonUint64(body.byte_size);
        if (byteSize === undefined) throw Errors.jsonNotUnsigned();
        registerSystemRegion(shm, region, key, Number(offset), Number(byteSize));
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
