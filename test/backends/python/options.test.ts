/**
 * The Python backend's own `--backend-config=python,<key>=<value>` keys: defaults, bounds, the
 * texts that name a bad key (the CLI prints them as they are, test/e2e/cli.test.ts), and
 * Triton's keys that are accepted without effect.
 */
import { describe, expect, it } from 'vitest';
import { CustomMetrics } from '../../../src/core/custom-metrics.js';
import { SPIN_MODES } from '../../../src/backends/python/ipc/channel.js';
import { pythonBackendOptions } from '../../../src/backends/python/options.js';

const python = (kv: Record<string, string>) => new Map([['python', new Map(Object.entries(kv))]]);
const refusal = (kv: Record<string, string>): string => {
  try {
    pythonBackendOptions(python(kv));
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(kv)}`);
};

describe('pythonBackendOptions', () => {
  it('has the defaults without python entries, whatever other backends are given', () => {
    const defaults = {
      pythonExecutable: 'python3',
      shmDefaultByteSize: 1 << 20,
      shmGrowthByteSize: 1 << 20,
      stubTimeoutSeconds: 30,
      initializeTimeoutSeconds: 0,
      ipcWait: { spinUs: 50, spinMode: 'adaptive' },
      maxAsyncExecutes: 128,
      concurrentAsyncExecutes: 1,
      stubStart: 'fork',
    };
    expect(pythonBackendOptions(new Map())).toEqual(defaults);
    expect(pythonBackendOptions(new Map([['onnxruntime', new Map([['run-in', 'main']])]]))).toEqual(defaults);
  });

  it('reads every key', () => {
    expect(
      pythonBackendOptions(
        python({
          'python-executable': '/opt/venv/bin/python',
          'shm-default-byte-size': '16777216',
          'shm-growth-byte-size': '4096',
          'stub-timeout-seconds': '5',
          'initialize-timeout-seconds': '600',
          'spin-us': '1000000',
          'spin-mode': 'never',
          'max-async-executes': '2',
          'concurrent-async-executes': '8',
          'stub-start': 'spawn',
        }),
      ),
    ).toEqual({
      pythonExecutable: '/opt/venv/bin/python',
      shmDefaultByteSize: 16777216,
      shmGrowthByteSize: 4096,
      stubTimeoutSeconds: 5,
      initializeTimeoutSeconds: 600,
      ipcWait: { spinUs: 1_000_000, spinMode: 'never' },
      maxAsyncExecutes: 2,
      concurrentAsyncExecutes: 8,
      stubStart: 'spawn',
    });
  });

  it('takes every spin mode the IPC wait code knows', () => {
    for (const mode of SPIN_MODES) expect(pythonBackendOptions(python({ 'spin-mode': mode })).ipcWait).toEqual({ spinUs: 50, spinMode: mode });
  });

  it("accepts Triton's keys that mean nothing here", () => {
    expect(pythonBackendOptions(python({ 'shm-region-prefix-name': 'x', 'thread-pool-size': '4', shm_message_queue_size: '1000' })).shmDefaultByteSize).toBe(
      1 << 20,
    );
  });

  it('passes the server wiring through', () => {
    const customMetrics = new CustomMetrics();
    const hostPolicies = new Map([['policy', [0, 1]]]);
    const o = pythonBackendOptions(new Map(), { customMetrics, hostPolicies });
    expect(o.customMetrics).toBe(customMetrics);
    expect(o.hostPolicies).toBe(hostPolicies);
  });

  it.each([
    [{ 'no-such-key': '1' }, '--backend-config=python,no-such-key: unknown python backend setting.'],
    [{ 'concurrent-async-executes': '0' }, "--backend-config=python,concurrent-async-executes: must be a positive number of coroutines, got '0'."],
    [{ 'shm-default-byte-size': '10' }, "--backend-config=python,shm-default-byte-size: must be at least 1 MiB (1048576 bytes), got '10'."],
    [{ 'shm-growth-byte-size': '0' }, "--backend-config=python,shm-growth-byte-size: must be a positive number of bytes, got '0'."],
    [{ 'stub-timeout-seconds': '1.5' }, "--backend-config=python,stub-timeout-seconds: must be a positive number of seconds, got '1.5'."],
    [{ 'initialize-timeout-seconds': '-1' }, "--backend-config=python,initialize-timeout-seconds: must be a number of seconds (0: no bound), got '-1'."],
    [{ 'spin-us': '-1' }, "--backend-config=python,spin-us: must be a whole number of microseconds between 0 and 1000000, got '-1'."],
    [{ 'spin-us': '1000001' }, "--backend-config=python,spin-us: must be a whole number of microseconds between 0 and 1000000, got '1000001'."],
    [{ 'spin-mode': 'sometimes' }, "--backend-config=python,spin-mode: must be adaptive, always or never, got 'sometimes'."],
    [{ 'max-async-executes': '0' }, "--backend-config=python,max-async-executes: must be a positive number of coroutines, got '0'."],
    [{ 'stub-start': 'exec' }, "--backend-config=python,stub-start: must be fork or spawn, got 'exec'."],
  ])('refuses %j, naming the key, what it must be and the value', (kv, text) => {
    expect(refusal(kv)).toBe(text);
  });

  it('names an unknown key before a bad value of a known one', () => {
    expect(refusal({ 'spin-us': '-1', 'no-such-key': '1' })).toBe('--backend-config=python,no-such-key: unknown python backend setting.');
  });
});
