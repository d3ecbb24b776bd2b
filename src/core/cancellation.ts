/**
 * @module core/cancellation
 * How a frontend tells the core that a client went away. `CancelSignal` is the part of
 * `AbortSignal` the core uses, so a gRPC call's AbortSignal fits as is; `CancelToken` is a
 * light implementation for the HTTP hot path, where an AbortController (an EventTarget) per
 * request cost more than parsing the request.
 */

/**
 * A function, or an object whose `handleEvent()` is called (as EventTarget takes them): a
 * record that already exists per request listens without a closure of its own.
 */
export type AbortListener = (() => void) | { handleEvent(): void };

export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: AbortListener, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: AbortListener): void;
}

export class CancelToken implements CancelSignal {
  #aborted = false;
  #listeners: AbortListener[] | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  /** Marks the request cancelled and calls every listener once. */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const l of listeners) typeof l === 'function' ? l() : l.handleEvent();
  }

  addEventListener(_type: 'abort', listener: AbortListener): void {
    if (this.#aborted) return;
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: AbortListener): void {
    const i = this.#listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.#listeners!.splice(i, 1);
  }
}
