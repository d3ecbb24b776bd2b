/**
 * @module core/errors/internal
 * Catalogue: what is not a refusal but a fault — anything thrown that is not a `TritonError`.
 */
import { entry } from './entry.js';
import { ErrorCode, type FailureReason } from './triton-error.js';

export const internal = {
  internal: entry(
    {
      code: ErrorCode.INTERNAL,
      text: '{message}',
      when: 'Something other than a catalogue error was thrown (a bug or a system error); the text is its message.',
    },
    (err: unknown) => ({ message: err instanceof Error ? err.message : String(err) }),
  ),
  fromMainThread: entry(
    {
      code: 'varies',
      text: '{message}',
      when: 'A frontend thread (--http-thread-count, --grpc-thread-count) gets an error the core raised on the main thread: the same code, reason, text and entry name, carried across.',
    },
    (e: { code: ErrorCode; message: string; reason: FailureReason; entry?: string }) => ({
      message: e.message,
      $code: e.code,
      $reason: e.reason,
      ...(e.entry !== undefined ? { $entry: e.entry } : {}),
    }),
  ),
  mainThreadUnresponsive: entry(
    {
      code: ErrorCode.UNAVAILABLE,
      text: 'the server did not answer {what} within {seconds} s',
      when: "A frontend thread's question to the main thread (a model lookup, statistics, settings) went unanswered: the main thread is stuck or exiting.",
    },
    (what: string, seconds: number) => ({ what, seconds }),
  ),
} as const;
