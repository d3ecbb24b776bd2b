/**
 * A server whose log nobody reads any more (the pipe its stderr goes to was closed: the
 * supervisor, `| head` or a log shipper went away) keeps serving, and still stops on SIGTERM,
 * cleanly and without leaving shared memory behind. Its exit used to wait forever, retrying the
 * last log lines against a broken pipe.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { makeRepo, shmFilesOf, startTritium, type Tritium } from '../helpers/server.js';

let t: Tritium | undefined;

afterAll(async () => {
  if (t && t.proc.exitCode === null && t.proc.signalCode === null) t.proc.kill('SIGKILL');
});

const addSub = (http: string) =>
  fetch(`${http}/v2/models/add_sub/infer`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [
        { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
        { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 1, 1, 1] },
      ],
    }),
  });

describe('the log pipe closed by its reader', () => {
  it('the server keeps answering, and exits on SIGTERM with code 0 and no /dev/shm leftovers', async () => {
    // --log-verbose=1: every execution logs a line, so writes meet the closed pipe at once.
    t = await startTritium({ repos: [makeRepo(['add_sub'])], args: ['--log-verbose=1'] });
    t.proc.stdout!.destroy();
    t.proc.stderr!.destroy();
    for (let i = 0; i < 20; i++) {
      const res = await addSub(t.http);
      expect(res.status).toBe(200);
      expect((await res.json()).outputs[0].data).toEqual([2, 3, 4, 5]);
    }
    const pid = t.proc.pid;
    const exit = await Promise.race([t.stop('SIGTERM'), new Promise((r) => setTimeout(() => r('still running after 30 s'), 30_000))]);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(shmFilesOf(pid)).toEqual([]);
  }, 60_000);
});
