/**
 * @module core/scheduling/queue
 * Queue structures for the schedulers: a growable ring buffer (O(1) push / shift / indexed
 * read) and the dynamic batcher's priority queue built from rings.
 *
 *   Ring (capacity 8, head = 5, length = 5)
 *
 *     index   0   1   2   3   4   5   6   7
 *           ┌───┬───┬───┬───┬───┬───┬───┬───┐
 *           │ d │ e │   │   │   │ a │ b │ c │      at(0) = a … at(4) = e
 *           └───┴───┴───┴───┴───┴───┴───┴───┘      push writes slot (head+length) & mask
 *                     ▲               ▲            shift reads slot head, head = (head+1) & mask
 *                   tail            head
 *
 *   PriorityQueue: one Level per priority level, highest priority first. Each level has a
 *   `main` ring and a `delayed` ring (requests whose timeout expired under the DELAY policy are
 *   moved behind every non-expired request of their level). Scan order = what the batcher
 *   serves first:
 *
 *     level 1: main ─► delayed ─► level 2: main ─► delayed ─► … ─► level N: main ─► delayed
 *
 *   Removal from the middle (cancelled / expired requests found while scanning, or by the
 *   timeout sweep) is lazy: the item is flagged `dead` and skipped; dead items are discarded
 *   when they reach the head or when a sweep compacts the ring. `live` counts exclude them, so
 *   `max_queue_size` and `pendingCount()` stay exact.
 */

/** FIFO over a power-of-two array. Never shrinks; slots are cleared on shift for the GC. */
export class Ring<T> {
  private buf: Array<T | undefined>;
  private mask: number;
  private head = 0;
  private len = 0;

  constructor(capacity = 16) {
    let cap = 4;
    while (cap < capacity) cap *= 2;
    this.buf = new Array<T | undefined>(cap);
    this.mask = cap - 1;
  }

  get length(): number {
    return this.len;
  }

  push(value: T): void {
    if (this.len === this.buf.length) this.grow();
    this.buf[(this.head + this.len) & this.mask] = value;
    this.len++;
  }

  shift(): T | undefined {
    if (this.len === 0) return undefined;
    const value = this.buf[this.head];
    this.buf[this.head] = undefined;
    this.head = (this.head + 1) & this.mask;
    this.len--;
    return value;
  }

  peek(): T | undefined {
    return this.len === 0 ? undefined : this.buf[this.head];
  }

  /** The i-th item from the head; 0 <= i < length (not checked, hot path). */
  at(i: number): T {
    return this.buf[(this.head + i) & this.mask] as T;
  }

  /** Keeps the items for which `keep` is true, in order. O(length). */
  retain(keep: (value: T) => boolean): void {
    let w = 0;
    for (let r = 0; r < this.len; r++) {
      const v = this.buf[(this.head + r) & this.mask] as T;
      if (keep(v)) this.buf[(this.head + w++) & this.mask] = v;
    }
    for (let r = w; r < this.len; r++) this.buf[(this.head + r) & this.mask] = undefined;
    this.len = w;
  }

  /** Empties the ring and returns what it held, in order. */
  drain(): T[] {
    const out: T[] = new Array<T>(this.len);
    for (let i = 0; i < this.len; i++) out[i] = this.buf[(this.head + i) & this.mask] as T;
    this.clear();
    return out;
  }

  clear(): void {
    if (this.len > 0) this.buf.fill(undefined);
    this.head = 0;
    this.len = 0;
  }

  private grow(): void {
    const old = this.buf;
    const next = new Array<T | undefined>(old.length * 2);
    for (let i = 0; i < this.len; i++) next[i] = old[(this.head + i) & this.mask];
    this.buf = next;
    this.mask = next.length - 1;
    this.head = 0;
  }
}

/** What the priority queue stores: anything that can be flagged dead in place. */
export interface QueueItem {
  dead: boolean;
}

export class Level<E extends QueueItem> {
  readonly main = new Ring<E>();
  readonly delayed = new Ring<E>();
  /** Items not flagged dead, in both rings. */
  live = 0;
}

/**
 * Priority levels in serving order (index 0 = highest priority). The batcher scans the rings
 * directly (see the module comment for the order) and uses the methods here to mutate.
 */
export class PriorityQueue<E extends QueueItem> {
  readonly levels: Level<E>[];
  /** Live items over all levels. */
  size = 0;

  constructor(levelCount: number) {
    this.levels = [];
    for (let i = 0; i < Math.max(1, levelCount); i++) this.levels.push(new Level<E>());
  }

  push(level: number, item: E): void {
    const l = this.levels[level]!;
    l.main.push(item);
    l.live++;
    this.size++;
  }

  /** Flags a live item dead (it stays in its ring until shifted or compacted). */
  kill(level: number, item: E): void {
    item.dead = true;
    const l = this.levels[level]!;
    l.live--;
    this.size--;
    // Everything left in the level is dead: drop it now instead of shifting it out later.
    if (l.live === 0) {
      l.main.clear();
      l.delayed.clear();
    }
  }

  /**
   * Moves a live item of `main` behind the level (DELAY policy). The old slot is flagged dead
   * and `replacement` (a fresh item for the same request) goes to the delayed ring, so live
   * counts do not change.
   */
  moveToDelayed(level: number, item: E, replacement: E): void {
    item.dead = true;
    this.levels[level]!.delayed.push(replacement);
  }

  /** Removes and returns the first live item in serving order. */
  shiftLive(): E | undefined {
    for (let i = 0; i < this.levels.length; i++) {
      const l = this.levels[i]!;
      if (l.live === 0) continue;
      const item = shiftLiveFrom(l.main) ?? shiftLiveFrom(l.delayed);
      if (item !== undefined) {
        l.live--;
        this.size--;
        return item;
      }
    }
    return undefined;
  }

  /** Removes every item, returning the live ones in serving order. */
  drainLive(): E[] {
    const out: E[] = [];
    for (const l of this.levels) {
      for (const ring of [l.main, l.delayed]) {
        for (const item of ring.drain()) if (!item.dead) out.push(item);
      }
      l.live = 0;
    }
    this.size = 0;
    return out;
  }
}

function shiftLiveFrom<E extends QueueItem>(ring: Ring<E>): E | undefined {
  while (ring.length > 0) {
    const item = ring.shift()!;
    if (!item.dead) return item;
  }
  return undefined;
}
