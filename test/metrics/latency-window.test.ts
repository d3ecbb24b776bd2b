import { describe, expect, it } from 'vitest';
import { AGE_SLOTS, LatencyWindow } from '../../src/frontends/metrics/latency-window.js';

describe('LatencyWindow', () => {
  it('reports NaN for every quantile while the window is empty, as Triton prints Nan', () => {
    const w = new LatencyWindow();
    expect(w.quantiles([0.5, 0.99])).toEqual([Number.NaN, Number.NaN]);
    expect([w.count, w.sum]).toEqual([0, 0]);
  });

  it('is exact below 128 µs (nearest rank)', () => {
    const w = new LatencyWindow();
    for (let v = 1; v <= 100; v++) w.observe(v);
    expect(w.quantiles([0, 0.5, 0.9, 0.99, 1])).toEqual([1, 50, 90, 99, 100]);
    expect([w.count, w.sum]).toEqual([100, 5050]);
  });

  it('is within 1 % of the value at that rank above', () => {
    const w = new LatencyWindow();
    const values = Array.from({ length: 10_000 }, (_, i) => 200 + ((i * 7919) % 1_000_000));
    for (const v of values) w.observe(v);
    const sorted = [...values].sort((a, b) => a - b);
    const qs = [0.5, 0.9, 0.95, 0.99, 0.999];
    w.quantiles(qs).forEach((got, i) => {
      const want = sorted[Math.ceil(qs[i]! * sorted.length) - 1]!;
      expect(Math.abs(got - want) / want).toBeLessThan(0.01);
    });
    // Days-long observations share the last bucket instead of overflowing.
    w.observe(2 ** 50);
    expect(Number.isFinite(w.quantiles([1])[0])).toBe(true);
  });

  it('forgets an observation after a full turn of age slots; count and sum stay cumulative', () => {
    const w = new LatencyWindow();
    w.observe(10);
    for (let i = 0; i < AGE_SLOTS - 1; i++) {
      w.rotate();
      expect(w.quantiles([0.5])).toEqual([10]);
    }
    w.observe(20);
    w.rotate();
    expect(w.quantiles([0.5])).toEqual([20]);
    w.rotate();
    w.rotate();
    w.rotate();
    w.rotate();
    expect(w.quantiles([0.5])).toEqual([Number.NaN]);
    expect([w.count, w.sum]).toEqual([2, 30]);
  });
});
