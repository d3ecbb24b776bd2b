/**
 * @module frontends/metrics/latency-window
 * The quantile estimator behind the `_summary_us` families (`--metrics-config summary_latencies=true`).
 *
 * Why not prom-client's Summary: it feeds every observation to five t-digests (one per age
 * bucket) after hashing the label set, which measured 12–20 µs per observation here — five
 * families make that up to 100 µs per request. This window costs one array increment per
 * observation instead: values go into log-linear buckets (exact below 128, 1 % wide above, so a
 * reported quantile is within 1 % of the observed value at that rank, tighter than the rank
 * errors Triton's quantile settings ask for), and the window keeps one bucket array per age slot.
 *
 * Sliding window as Triton's summaries have (prometheus-cpp's default: 60 s in 5 age buckets): the
 * owner calls `rotate()` every `maxAge / AGE_SLOTS`, which forgets the oldest slot; quantiles are
 * read over all slots, i.e. the last 48–60 s. `count` and `sum` are cumulative, as Prometheus
 * summaries' `_count` and `_sum` are.
 */

/** Age slots per window (prometheus-cpp's default age buckets). */
export const AGE_SLOTS = 5;
/** The whole window, in ms (prometheus-cpp's default max age). */
export const WINDOW_MS = 60_000;

/** Values below this have a bucket each (µs observations are whole numbers). */
const LINEAR = 128;
/** Ratio between the bounds of a log bucket: 2 % wide, so its middle is within 1 % of any value in it. */
const GAMMA = 1.02;
const INV_LOG_GAMMA = 1 / Math.log(GAMMA);
/** Log buckets up to about 2^40 µs (12 days); longer observations share the last bucket. */
const BUCKETS = LINEAR + Math.ceil(Math.log(2 ** 40 / LINEAR) * INV_LOG_GAMMA) + 1;

function bucketOf(v: number): number {
  if (!(v > 0)) return 0;
  if (v < LINEAR) return Math.floor(v);
  const i = LINEAR + Math.floor(Math.log(v / LINEAR) * INV_LOG_GAMMA);
  return i < BUCKETS ? i : BUCKETS - 1;
}

/** The value reported for bucket `i`: itself below LINEAR, the geometric middle of its bounds above. */
function bucketValue(i: number): number {
  if (i < LINEAR) return i;
  return Math.round(LINEAR * GAMMA ** (i - LINEAR + 0.5));
}

export class LatencyWindow {
  count = 0;
  sum = 0;
  /** Bucket counts per age slot; allocated on a slot's first observation. */
  private readonly slots: Array<Uint32Array | undefined> = new Array(AGE_SLOTS).fill(undefined);
  private current = 0;

  observe(v: number): void {
    this.count++;
    this.sum += v;
    let slot = this.slots[this.current];
    if (slot === undefined) {
      slot = new Uint32Array(BUCKETS);
      this.slots[this.current] = slot;
    }
    slot[bucketOf(v)]!++;
  }

  /** Starts a new age slot, forgetting the observations of the oldest one. */
  rotate(): void {
    this.current = (this.current + 1) % AGE_SLOTS;
    this.slots[this.current]?.fill(0);
  }

  /**
   * The values at the quantiles `qs` (each 0..1) over the window, by nearest rank; NaN for each
   * when the window holds no observation (as Prometheus summaries report an empty window).
   */
  quantiles(qs: readonly number[]): number[] {
    const merged = new Float64Array(BUCKETS);
    let n = 0;
    for (const slot of this.slots) {
      if (slot === undefined) continue;
      for (let i = 0; i < BUCKETS; i++) {
        const c = slot[i]!;
        if (c !== 0) {
          merged[i]! += c;
          n += c;
        }
      }
    }
    if (n === 0) return qs.map(() => Number.NaN);
    return qs.map((q) => {
      const rank = Math.max(1, Math.ceil(q * n));
      let seen = 0;
      for (let i = 0; i < BUCKETS; i++) {
        seen += merged[i]!;
        if (seen >= rank) return bucketValue(i);
      }
      return bucketValue(BUCKETS - 1);
    });
  }
}
