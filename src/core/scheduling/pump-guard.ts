/**
 * @module core/scheduling/pump-guard
 * A scheduler's pump must not re-enter itself: handing a batch to an instance, or failing a
 * request whose sink answers at once, can call back into enqueue() and so into the pump. A call
 * made while the pump runs asks for one more pass instead, which runs when the current one ends.
 */
export class PumpGuard {
  private running = false;
  private again = false;

  /** Runs `pass` now, or once more after the pass under way. */
  run(pass: () => void): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        pass();
      } while (this.again);
    } finally {
      this.running = false;
    }
  }
}
