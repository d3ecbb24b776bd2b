/**
 * @module cli/nearest-flag
 * The known flag a misspelt one most likely meant, for "unknown option ... (Did you mean ...?)".
 * A unique flag the given one abbreviates (`--model-repo`) wins; otherwise the closest by edit
 * distance (insertions, deletions, substitutions, swaps of two neighbours), if the distance is at
 * most a third of the flag's length.
 */

/** Optimal-string-alignment distance between two strings. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

export function nearestFlag(given: string, known: readonly string[]): string | undefined {
  const prefixed = known.filter((k) => k.startsWith(given));
  if (prefixed.length === 1) return prefixed[0];
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(given.length / 3)) + 1;
  for (const k of known) {
    const dist = distance(given, k);
    if (dist < bestDistance) {
      best = k;
      bestDistance = dist;
    }
  }
  return best;
}
