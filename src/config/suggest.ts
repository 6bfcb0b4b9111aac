/**
 * The known name closest to a mistyped one, for "did you mean" hints: the smallest
 * edit distance (insert, delete, replace, swap two neighbours), if it is small for
 * the word's length; undefined when nothing is close.
 */
export function closestName(word: string, candidates: readonly string[]): string | undefined {
  const limit = Math.max(1, Math.min(3, Math.floor(word.length / 4)));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance (Damerau-Levenshtein without repeated edits of one substring). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0]!.push(j);
        continue;
      }
      const r = rows[i]!;
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, r[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      r.push(d);
    }
  }
  return rows[a.length]![b.length]!;
}
