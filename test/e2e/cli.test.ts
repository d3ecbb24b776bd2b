/**
 * The `tritium` command line: tritonserver's flag names, --help, refusal of unknown flags and
 * bad values, and config errors that name file, line and field.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, makeRepo, PYTHON, ROOT, startTritium } from '../helpers/server.js';

const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'bin', 'tritium.js'), ...args], { encoding: 'utf8', timeout: 30_000 });

beforeAll(() => ensureBuilt());

describe('flags', () => {
  it('lists tritonserver flag names in --help', () => {
    const r = cli('--help');
    expect(r.status).toBe(0);
    for (const flag of [
      '--model-repository',
      '--http-port',
      '--http-address',
      '--grpc-port',
      '--metrics-port',
      '--allow-http',
      '--allow-grpc',
      '--allow-metrics',
      '--log-verbose',
      '--backend-config',
      '--strict-model-config',
      '--disable-auto-complete-config',
      '--exit-timeout-secs',
      '--strict-readiness',
    ]) {
      expect(r.stdout).toContain(flag);
    }
  });

  it.each([
    [['--model-repository=x', '--bogus'], /unknown option '--bogus'/],
    [['--model-repository=x', '--http-port=abc'], /--http-port expects an integer, got 'abc'/],
    [['--model-repository=x', '--http-port=70000'], /--http-port must be between 0 and 65535/],
    [['--model-repository=x', '--allow-http=maybe'], /--allow-http expects true or false/],
    [['--model-repository=x', '--backend-config=python,shm-default-byte-size=10'], /must be at least 1 MiB/],
    [['--model-repository=x', '--backend-config=python,no-such-key=1'], /unknown python backend setting/],
    [['--model-repository=x', '--backend-config=nonsense'], /expects <backend>,<setting>=<value>/],
    [['--model-repository=x', '--backend-config=python,spin-us=-1'], /spin-us: must be a whole number of microseconds between 0 and 1000000, got '-1'/],
    [['--model-repository=x', '--backend-config=python,spin-us=1000001'], /spin-us: must be a whole number of microseconds between 0 and 1000000/],
    [['--model-repository=x', '--backend-config=python,spin-mode=sometimes'], /spin-mode: must be adaptive, always or never, got 'sometimes'/],
    [['--model-repository=x', '--backend-config=python,max-async-executes=0'], /max-async-executes: must be a positive number of coroutines, got '0'/],
    [['--model-repository=x', '--backend-config=onnxruntime,threads=2'], /--backend-config=onnxruntime,threads: unknown onnxruntime backend setting/],
    [['--http-port=1'], /--model-repository must be specified/],
    [['--model-repository=x', '--http-port=9000', '--grpc-port=9000'], /same port 9000/],
    [['--model-repository=x', '--load-model=a'], /Use of '--load-model' requires setting '--model-control-mode=explicit' as well\./],
    [
      ['--model-repository=x', '--model-control-mode=explicit', '--load-model=*', '--load-model=a'],
      /Wildcard model name '\*' must be the ONLY startup model if specified at all\./,
    ],
    [['--model-repository=x', '--repository-poll-secs=-1'], /--repository-poll-secs must be between 0/],
  ])('refuses %j with a message and exit status 2', (args, message) => {
    const r = cli(...args);
    // A usage error, whether the command line or a backend refused it: nothing was started.
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});

describe('model configuration errors', () => {
  it('names the file, line and field of a bad config.pbtxt and exits non-zero', async () => {
    const repo = makeRepo(['bad_config']);
    const s = await startTritium({ repos: [repo], expectFailure: true });
    const { code } = await s.exited;
    expect(code).not.toBe(0);
    expect(s.log()).toMatch(/bad_config\/config\.pbtxt:4:\d+: .*dimz/);
  });

  it('does not auto-complete with --disable-auto-complete-config', async () => {
    const repo = makeRepo(['auto_complete']);
    const plain = await startTritium({ repos: [repo] });
    const completed = await (await fetch(`${plain.http}/v2/models/auto_complete/config`)).json();
    await plain.stop();
    const strict = await startTritium({ repos: [repo], args: ['--disable-auto-complete-config'] });
    const bare = await (await fetch(`${strict.http}/v2/models/auto_complete/config`)).json();
    await strict.stop();
    expect(completed.input.length).toBeGreaterThan(0);
    expect(bare.input).toEqual([]);
    expect(bare.output).toEqual([]);
  });

  it('runs a model in the environment EXECUTION_ENV_PATH names', async () => {
    const repo = makeRepo(['exec_env']);
    // A virtualenv laid out by hand around the test venv's interpreter and packages.
    const env = path.join(repo, 'exec_env', 'env');
    const venv = path.dirname(path.dirname(PYTHON));
    fs.mkdirSync(path.join(env, 'bin'), { recursive: true });
    fs.symlinkSync(PYTHON, path.join(env, 'bin', 'python'));
    fs.writeFileSync(path.join(env, 'bin', 'activate'), ''); // Triton requires it (never run)
    fs.copyFileSync(path.join(venv, 'pyvenv.cfg'), path.join(env, 'pyvenv.cfg'));
    fs.symlinkSync(path.join(venv, 'lib'), path.join(env, 'lib'));
    const s = await startTritium({ repos: [repo] });
    try {
      const res = await fetch(`${s.http}/v2/models/exec_env/infer`, {
        method: 'POST',
        body: JSON.stringify({ inputs: [{ name: 'IN', shape: [1], datatype: 'FP32', data: [0] }] }),
      });
      expect(res.status).toBe(200);
      const info = JSON.parse((await res.json()).outputs[0].data[0]);
      expect(fs.realpathSync(info.virtual_env)).toBe(fs.realpathSync(env));
      expect(fs.realpathSync(info.path0)).toBe(fs.realpathSync(path.join(env, 'bin')));
    } finally {
      await s.stop();
    }
  });

  it('refuses an EXECUTION_ENV_PATH that holds no Python environment, wherever it points', async () => {
    // Triton allows any absolute path (and $$TRITON_MODEL_DIRECTORY/..); it must hold bin/activate.
    const repo = makeRepo(['exec_env']);
    const cfg = path.join(repo, 'exec_env', 'config.pbtxt');
    fs.writeFileSync(cfg, fs.readFileSync(cfg, 'utf8').replace('$$TRITON_MODEL_DIRECTORY/env', '/etc'));
    const s = await startTritium({ repos: [repo], expectFailure: true });
    const { code } = await s.exited;
    expect(code).not.toBe(0);
    expect(s.log()).toContain("Path /etc/bin/activate does not exist. The Python environment should contain an 'activate' script.");
  });

  it('says what to install when the interpreter lacks numpy or msgpack', async () => {
    const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-bare-venv-'));
    spawnSync(PYTHON, ['-m', 'venv', '--without-pip', bare], { encoding: 'utf8' });
    const s = await startTritium({
      repos: [makeRepo(['add_sub'])],
      args: [`--backend-config=python,python-executable=${path.join(bare, 'bin', 'python')}`],
      expectFailure: true,
    });
    const { code } = await s.exited;
    expect(code).not.toBe(0);
    // One record, escaped onto one line (Triton's log format): the newline is written as \n.
    expect(s.log()).toMatch(/failed to load 'add_sub'.*is not healthy\. The stub exited with code 3\.\\n.*needs numpy and msgpack/);
    expect(s.log()).toContain('-m pip install numpy msgpack');
  });

  it('reports a missing interpreter as a load error naming it', async () => {
    const repo = makeRepo(['add_sub']);
    const s = await startTritium({
      repos: [repo],
      args: ['--backend-config=python,python-executable=/nonexistent/python3'],
      expectFailure: true,
    });
    const { code } = await s.exited;
    expect(code).not.toBe(0);
    expect(s.log()).toContain('/nonexistent/python3');
    void PYTHON;
  });
});
