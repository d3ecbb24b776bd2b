/**
 * @module core/slot-table
 * A table of open entries keyed by integers handed out in increasing order (a stub session's
 * request ids, a connection's HTTP/2 stream ids, the request numbers of a frontend thread and of
 * the main thread's side of it): an array indexed by the key's low bits, an
 * entry still open when a later key lands on its slot (a long stream) moved to a Map.
 *
 * Why not a Map for all: with one insert and one delete per request a Map rehashes every few
 * requests, and V8 links each obsolete hash table to its successor (for live iterators), so one
 * table that a scavenge promoted keeps every later table, and the entries in them, alive through
 * the next scavenges. On the request path that promoted hundreds of bytes per request and made
 * each scavenge several times longer (docs/benchmarks.md, "Garbage collection and the young
 * generation"). An array slot is overwritten in place and keeps nothing.
 */
export class SlotTable<T> {
  readonly #values: Array<T | undefined>;
  /** The key of each occupied slot (doubles: request ids may pass 2^32). */
  readonly #keys: Float64Array;
  readonly #mask: number;
  /** Keys step by 2^shift (HTTP/2 client streams are odd: shift 1). */
  readonly #shift: number;
  /** Open entries pushed out of their slot by a later key. */
  readonly #overflow = new Map<number, T>();
  #size = 0;

  /** `slots`: a power of two, the open entries that fit without the Map. */
  constructor(slots = 1024, shift = 0) {
    if (slots <= 0 || (slots & (slots - 1)) !== 0) throw new Error(`SlotTable: slots must be a power of two, not ${slots}`);
    this.#values = new Array<T | undefined>(slots).fill(undefined);
    this.#keys = new Float64Array(slots).fill(-1);
    this.#mask = slots - 1;
    this.#shift = shift;
  }

  get size(): number {
    return this.#size;
  }

  #slot(key: number): number {
    // A division, not `>>>`, so that keys past 2^32 still spread over the slots.
    return Math.floor(key / 2 ** this.#shift) & this.#mask;
  }

  get(key: number): T | undefined {
    const i = this.#slot(key);
    if (this.#keys[i] === key) return this.#values[i];
    return this.#overflow.size > 0 ? this.#overflow.get(key) : undefined;
  }

  /** Adds an entry under a key not in the table. */
  set(key: number, value: T): void {
    const i = this.#slot(key);
    const old = this.#values[i];
    if (old !== undefined) this.#overflow.set(this.#keys[i]!, old);
    this.#values[i] = value;
    this.#keys[i] = key;
    this.#size++;
  }

  delete(key: number): boolean {
    const i = this.#slot(key);
    if (this.#keys[i] === key) {
      this.#values[i] = undefined;
      this.#keys[i] = -1;
    } else if (this.#overflow.size === 0 || !this.#overflow.delete(key)) {
      return false;
    }
    this.#size--;
    return true;
  }

  /** The open keys, oldest first, in a new array (callers delete entries while going through it). */
  keys(): number[] {
    const out = [...this.#overflow.keys()];
    for (let i = 0; i < this.#keys.length; i++) if (this.#keys[i]! >= 0) out.push(this.#keys[i]!);
    return out.sort((a, b) => a - b);
  }

  /** Empties the table and returns what it held, oldest first. */
  drain(): T[] {
    const out: T[] = [];
    for (const key of this.keys()) out.push(this.get(key)!);
    this.#values.fill(undefined);
    this.#keys.fill(-1);
    this.#overflow.clear();
    this.#size = 0;
    return out;
  }
}
