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
  /**
   * The first listener, kept without an array: a request usually has one (its stub session's
   * record), and an array with room made for it on the first push cost every request about
   * 90 bytes.
   */
  #first: AbortListener | undefined;
  #rest: AbortListener[] | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  /** Marks the request cancelled and calls every listener once, in the order they were added. */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    const first = this.#first;
    const rest = this.#rest;
    this.#first = undefined;
    this.#rest = undefined;
    if (first !== undefined) call(first);
    if (rest !== undefined) for (const l of rest) call(l);
  }

  addEventListener(_type: 'abort', listener: AbortListener): void {
    if (this.#aborted) return;
    // Into the first place only while nothing follows it, so the order stays the adding order.
    if (this.#first === undefined && (this.#rest === undefined || this.#rest.length === 0)) this.#first = listener;
    else (this.#rest ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: AbortListener): void {
    if (this.#first === listener) {
      this.#first = undefined;
      return;
    }
    const i = this.#rest?.indexOf(listener) ?? -1;
    if (i >= 0) this.#rest!.splice(i, 1);
  }
}

function call(l: AbortListener): void {
  if (typeof l === 'function') l();
  else l.handleEvent();
}
