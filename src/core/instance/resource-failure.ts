/**
 * @module core/instance/resource-failure
 * Which start failures mean "the host is short of something" rather than "this instance is
 * broken": descriptors (EMFILE, ENFILE), memory (ENOMEM, also a memfd segment that would exceed
 * the memory available), processes (EAGAIN from fork), space in /dev/shm (ENOSPC). Such a
 * failure says nothing about the model, so it must not count towards the crash-loop limit: a
 * client holding every descriptor for a while would otherwise retire an instance for good
 * (docs/design.md, "Supervision").
 */
import type { StartFailure } from './lifecycle.js';

const RESOURCE_CODES = new Set(['EMFILE', 'ENFILE', 'ENOMEM', 'EAGAIN', 'ENOSPC']);
/** The same conditions when only a message is left (a wrapped error, the stub's own report). */
const RESOURCE_TEXT: ReadonlyArray<[RegExp, string]> = [
  [/\b(EMFILE|ENFILE|ENOMEM|EAGAIN|ENOSPC)\b/, ''],
  [/Too many open files/, 'EMFILE'],
  [/Cannot allocate memory|out of memory for shared memory/, 'ENOMEM'],
  [/Resource temporarily unavailable/, 'EAGAIN'],
  [/No space left on device|\/dev\/shm is full/, 'ENOSPC'],
];

/** The shortage behind a start failure (its errno name), or undefined when it is not one. */
export function shortageOf(err: Error): string | undefined {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== undefined && RESOURCE_CODES.has(code)) return code;
    for (const [re, name] of RESOURCE_TEXT) {
      const m = re.exec(e.message);
      if (m) return name || m[1];
    }
  }
  return undefined;
}

export function classifyStartFailure(err: Error): StartFailure {
  const shortage = shortageOf(err);
  return shortage === undefined ? 'crash' : { shortage };
}
