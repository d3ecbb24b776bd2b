/**
 * @module backends/onnx/shapes
 * Shape bookkeeping between what a client sends and what the graph takes: config `reshape`
 * (inputs are handed to the graph in the reshape shape, outputs come back in the config dims)
 * and the grouping of a batch's requests into runs that can share one concatenated tensor.
 */
import { elementCount } from '../../core/tensor.js';

/**
 * A concrete shape for `toPattern` from a concrete `from` that matches `fromPattern`: the values
 * `from` has at the variable (-1) positions of `fromPattern` fill the variable positions of
 * `toPattern` in order (Triton carries variable dims over this way). When the counts of
 * variable dims differ, a single variable dim of `toPattern` is resolved by element count.
 */
export function mapShape(from: readonly number[], fromPattern: readonly number[], toPattern: readonly number[]): number[] {
  const vars: number[] = [];
  fromPattern.forEach((d, i) => {
    if (d === -1) vars.push(from[i] ?? 1);
  });
  const holes = toPattern.filter((d) => d === -1).length;
  if (holes === 0) return [...toPattern];
  if (holes === vars.length) {
    let k = 0;
    return toPattern.map((d) => (d === -1 ? vars[k++]! : d));
  }
  const fixed = elementCount(toPattern.filter((d) => d !== -1));
  const total = elementCount(from);
  if (holes === 1 && fixed > 0 && total % fixed === 0) return toPattern.map((d) => (d === -1 ? total / fixed : d));
  return [...from];
}

/** Rows a request contributes to a batched run (its first dimension). */
export function rowsOf(shape: readonly number[]): number {
  return shape.length > 0 ? shape[0]! : 1;
}

/**
 * Splits items into groups that may share one run, keeping first-appearance order, by a key
 * (which inputs are present and the shapes of their non-batch dimensions).
 */
export function groupBy<T>(items: readonly T[], key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const g = groups.get(k);
    if (g) g.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}
