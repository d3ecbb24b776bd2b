/**
 * @module core/errors/internal
 * Catalogue: what is not a refusal but a fault — anything thrown that is not a `TritonError`.
 */
import { entry } from './entry.js';
import { ErrorCode } from './triton-error.js';

export const internal = {
  internal: entry(
    {
      code: ErrorCode.INTERNAL,
      text: '{message}',
      when: 'Something other than a catalogue error was thrown (a bug or a system error); the text is its message.',
    },
    (err: unknown) => ({ message: err instanceof Error ? err.message : String(err) }),
  ),
} as const;
