/**
 * The descriptor watch's burst logic with a probe that fails as a process out of descriptors
 * does (EMFILE/ENFILE). The real exhaustion, through real sockets under a low RLIMIT_NOFILE, is
 * test/e2e/descriptor-exhaustion.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { DescriptorWatch, isDescriptorShortage } from '../../src/frontends/descriptor-watch.js';

function shortage(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: too many open files`), { code });
}

function watchWith(failures: Array<string | undefined>) {
  const warned: string[] = [];
  const infos: string[] = [];
  let i = 0;
  const watch = new DescriptorWatch({
    limit: 128,
    warn: (l) => warned.push(l),
    info: (l) => infos.push(l),
    probe: () => {
      const code = failures[i++];
      if (code !== undefined) throw shortage(code);
    },
  });
  return { watch, warned, infos };
}

describe('descriptor watch', () => {
  it('logs and counts one burst however many probes fail in it, and says when it ends', () => {
    const { watch, warned, infos } = watchWith(['EMFILE', 'EMFILE', 'ENFILE', undefined, undefined]);
    for (let n = 0; n < 5; n++) watch.check();
    expect(watch.exhaustions).toBe(1);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain('all 128 file descriptors of the server are in use');
    expect(warned[0]).toContain('--http-max-connections');
    expect(infos).toHaveLength(1);
    expect(infos[0]).toMatch(/^file descriptors are available again after \d+\.\d s/);
    expect(watch.exhausted).toBe(false);
  });

  it('counts each burst', () => {
    const { watch, warned } = watchWith(['EMFILE', undefined, 'EMFILE', 'EMFILE', undefined, 'ENFILE']);
    for (let n = 0; n < 6; n++) watch.check();
    expect(watch.exhaustions).toBe(3);
    expect(warned).toHaveLength(3);
    expect(watch.exhausted).toBe(true);
  });

  it('takes a listening server’s EMFILE into the current burst and leaves other errors to the caller', () => {
    const { watch, warned } = watchWith(['EMFILE']);
    expect(watch.report(shortage('EMFILE'))).toBe(true);
    watch.check();
    expect(watch.report(shortage('ENFILE'))).toBe(true);
    expect(watch.exhaustions).toBe(1);
    expect(warned).toHaveLength(1);
    expect(watch.report(Object.assign(new Error('boom'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isDescriptorShortage(new Error('no code'))).toBe(false);
  });

  it('ignores probe errors that are not shortages', () => {
    const { watch, warned } = watchWith(['EACCES']);
    watch.check();
    expect(watch.exhaustions).toBe(0);
    expect(warned).toEqual([]);
  });
});
