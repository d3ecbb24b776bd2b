/**
 * `--backend-config` on the command line: the CLI checks only the `<backend>,<key>=<value>`
 * shape and passes every entry on as given, by backend; each backend reads and checks its own
 * keys when the server starts (test/backends/python/options.test.ts).
 */
import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildCommand, parseOptions } from '../../src/cli/options.js';

/** Parses like the CLI, without commander's own error output on stderr. */
const parse = (...args: string[]) => {
  const cmd = buildCommand().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  return parseOptions(['--model-repository=models', ...args], cmd);
};

const entries = (config: ReadonlyMap<string, ReadonlyMap<string, string>>) => Object.fromEntries([...config].map(([b, kv]) => [b, Object.fromEntries(kv)]));

describe('--backend-config', () => {
  it('keeps every entry as given, by backend, the last value of a key winning', () => {
    const o = parse(
      '--backend-config=python,shm-default-byte-size=16777216',
      '--backend-config=python,spin-mode=always',
      '--backend-config=python,spin-mode=never',
      '--backend-config=onnxruntime,run-in=main',
      '--backend-config=default-max-batch-size=8',
      '--backend-config=python,python-executable=/opt/py=3/bin/python',
    );
    expect(entries(o.backendConfig)).toEqual({
      python: { 'shm-default-byte-size': '16777216', 'spin-mode': 'never', 'python-executable': '/opt/py=3/bin/python' },
      onnxruntime: { 'run-in': 'main' },
      '': { 'default-max-batch-size': '8' },
    });
    expect(o.defaultMaxBatchSize).toBe(8);
  });

  it('leaves the keys and values of a backend to that backend', () => {
    const o = parse('--backend-config=python,spin-us=-1', '--backend-config=python,no-such-key=1', '--backend-config=onnxruntime,threads=2');
    expect(entries(o.backendConfig)).toEqual({ python: { 'spin-us': '-1', 'no-such-key': '1' }, onnxruntime: { threads: '2' } });
  });

  it('is empty without the flag, and the global default-max-batch-size is 4', () => {
    const o = parse();
    expect(o.backendConfig.size).toBe(0);
    expect(o.defaultMaxBatchSize).toBe(4);
  });

  it('refuses an entry without the <backend>,<setting>=<value> shape', () => {
    expect(() => parse('--backend-config=nonsense')).toThrow(CommanderError);
    expect(() => parse('--backend-config=nonsense')).toThrow(/--backend-config expects <backend>,<setting>=<value>, got 'nonsense'\./);
  });

  it('checks the global default-max-batch-size, the server setting', () => {
    expect(() => parse('--backend-config=default-max-batch-size=x')).toThrow(
      "--backend-config=default-max-batch-size expects a non-negative integer, got 'x'.",
    );
  });
});
