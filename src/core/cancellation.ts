/**
 * @module core/cancellation
 * How a frontend tells the core that a client went away. `CancelSignal` is the part of
 * `AbortSignal` the core uses, so a gRPC call's AbortSignal fits as is; `CancelToken` is a
 * light implementation for the HTTP hot path, where an AbortController (an EventTarget) per
 * request cost more than parsing the request.
 */

export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class CancelToken implements CancelSignal {
  #aborted = false;
  #listeners: Array<() => void> | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  /** Marks the request cancelled and calls every listener once. */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const l of listeners) l();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.#aborted) return;
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.#listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.#listeners!.splice(i, 1);
  }
}
