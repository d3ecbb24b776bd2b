import { describe, expect, it } from 'vitest';
import type { Parameters } from '../../src/core/inference.js';
import { readParameters } from '../../src/core/request/parameters.js';

describe('readParameters', () => {
  it('reads a request whose only parameters are triton_* flags as one without parameters', () => {
    // perf_analyzer sends triton_enable_empty_final_response with every gRPC request.
    const none = readParameters({});
    const flagOnly = readParameters({ triton_enable_empty_final_response: true });
    expect(flagOnly).toBe(none);
    expect(flagOnly).toEqual({ priority: 0, timeoutUs: 0, sequenceId: 0n, sequenceStart: false, sequenceEnd: false, custom: {} });
  });

  it('splits scheduling parameters from the custom ones the model sees', () => {
    const p = readParameters({
      priority: 2,
      timeout: 500,
      sequence_id: 7,
      sequence_start: true,
      triton_enable_empty_final_response: false,
      temperature: 0.5,
      tag: 'a',
    });
    expect(p).toEqual({ priority: 2, timeoutUs: 500, sequenceId: 7n, sequenceStart: true, sequenceEnd: false, custom: { temperature: 0.5, tag: 'a' } });
  });

  it('reads scheduling parameters alone with no custom ones', () => {
    const p = readParameters({ sequence_id: 'corr-1', sequence_end: true });
    expect(p.sequenceId).toBe('corr-1');
    expect(p.sequenceEnd).toBe(true);
    expect(Object.keys(p.custom)).toEqual([]);
  });

  it('keeps a custom key named __proto__ as an own key, and ignores inherited keys', () => {
    const params = Object.create({ inherited: 1 }) as Parameters;
    Object.defineProperty(params, '__proto__', { value: 'x', enumerable: true, writable: true, configurable: true });
    const p = readParameters(params);
    expect(Object.keys(p.custom)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(p.custom, '__proto__')?.value).toBe('x');
  });

  it('refuses a priority that is not a non-negative integer', () => {
    expect(() => readParameters({ priority: -1 })).toThrow();
    expect(() => readParameters({ priority: 'high' })).toThrow();
  });
});
