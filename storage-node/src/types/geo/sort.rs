//! The two sorts Redis orders search results with, reproduced step by step, because their
//! order among equal distances (members at the same position) is part of the reply:
//!
//! - all results: C's `qsort`, which glibc implements as a top-down merge sort (stable);
//! - only the first `count` of more results (COUNT): Redis's `pqsort`, a partial
//!   Bentley-McIlroy quicksort that leaves ranges outside `[0, count)` unsorted, and does
//!   not keep equal elements in order.
//!
//! The comparison is an `Ordering` as C's comparator returns it, which need not be a total
//! order (a NaN distance compares "less" both ways), so neither sort relies on one.

use std::cmp::Ordering;

/// glibc's merge sort: halves of `n / 2` and `n - n / 2`, merged taking from the left
/// half unless its head compares greater. Recursion depth is log2 of the length.
pub fn merge_sort<T: Copy>(v: &mut [T], cmp: &impl Fn(&T, &T) -> Ordering) {
    let mut scratch = Vec::with_capacity(v.len());
    merge_sort_with(v, &mut scratch, cmp);
}

fn merge_sort_with<T: Copy>(v: &mut [T], scratch: &mut Vec<T>, cmp: &impl Fn(&T, &T) -> Ordering) {
    if v.len() <= 1 {
        return;
    }
    let n1 = v.len() / 2;
    let (left, right) = v.split_at_mut(n1);
    merge_sort_with(left, scratch, cmp);
    merge_sort_with(right, scratch, cmp);
    scratch.clear();
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < v.len() {
        if cmp(&v[i], &v[j]) != Ordering::Greater {
            scratch.push(v[i]);
            i += 1;
        } else {
            scratch.push(v[j]);
            j += 1;
        }
    }
    scratch.extend_from_slice(&v[i..n1]);
    scratch.extend_from_slice(&v[j..]);
    v.copy_from_slice(scratch);
}

/// Insertion sort of `v[lo..lo + n]`.
fn insertion_sort<T>(v: &mut [T], lo: usize, n: usize, cmp: &impl Fn(&T, &T) -> Ordering) {
    for m in lo + 1..lo + n {
        let mut l = m;
        while l > lo && cmp(&v[l - 1], &v[l]) == Ordering::Greater {
            v.swap(l, l - 1);
            l -= 1;
        }
    }
}

/// The median of three positions, as Bentley and McIlroy pick it.
fn median_of_three<T>(
    v: &[T],
    a: usize,
    b: usize,
    c: usize,
    cmp: &impl Fn(&T, &T) -> Ordering,
) -> usize {
    let less = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Less;
    let greater = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Greater;
    if less(a, b) {
        if less(b, c) {
            b
        } else if less(a, c) {
            c
        } else {
            a
        }
    } else if greater(b, c) {
        b
    } else if less(a, c) {
        a
    } else {
        c
    }
}

/// Swaps `v[a..a + n]` with `v[b..b + n]` element by element, front to back.
fn swap_runs<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// Sorts enough of `v` that `v[first..=last]` holds what a full sort would put there, in
/// that order; the rest is left partitioned. Redis 7.0's `pqsort` (which, unlike later
/// versions, never falls back to an insertion sort for a part found already in order),
/// without recursion: the
/// parts still to sort wait on an explicit stack (each is disjoint from the others, so
/// the order they are done in does not change the result).
pub fn partial_quicksort<T>(
    v: &mut [T],
    first: usize,
    last: usize,
    cmp: &impl Fn(&T, &T) -> Ordering,
) {
    // A part `[lo, lo + n)` matters only if it overlaps the wanted range.
    let wanted = |lo: usize, n: usize| !(last < lo || first > lo + n - 1);
    let mut pending = vec![(0usize, v.len())];
    while let Some((lo, n)) = pending.pop() {
        if n < 7 {
            insertion_sort(v, lo, n, cmp);
            continue;
        }
        let mut pm = lo + n / 2;
        if n > 7 {
            let mut pl = lo;
            let mut pn = lo + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = median_of_three(v, pl, pl + d, pl + 2 * d, cmp);
                pm = median_of_three(v, pm - d, pm, pm + d, cmp);
                pn = median_of_three(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = median_of_three(v, pl, pm, pn, cmp);
        }
        v.swap(lo, pm);
        // Bentley-McIlroy three-way partition around v[lo]: elements equal to the pivot
        // gather at both ends ([lo + 1, pa) and (pd, lo + n)) while the scan runs.
        let (mut pa, mut pb) = (lo + 1, lo + 1);
        let (mut pc, mut pd) = (lo + n - 1, lo + n - 1);
        loop {
            while pb <= pc {
                let c = cmp(&v[pb], &v[lo]);
                if c == Ordering::Greater {
                    break;
                }
                if c == Ordering::Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[lo]);
                if c == Ordering::Less {
                    break;
                }
                if c == Ordering::Equal {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = lo + n;
        let r = (pa - lo).min(pb - pa);
        swap_runs(v, lo, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        swap_runs(v, pb, pn - r, r);
        let right = pd - pc;
        if right > 1 && wanted(pn - right, right) {
            pending.push((pn - right, right));
        }
        let left = pb - pa;
        if left > 1 && wanted(lo, left) {
            pending.push((lo, left));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sorts_sort() {
        let data: Vec<u32> = (0..200).map(|i| (i * 7919) % 101).collect();
        let mut full = data.clone();
        merge_sort(&mut full, &|a, b| a.cmp(b));
        let mut expected = data.clone();
        expected.sort();
        assert_eq!(full, expected);
        let mut partial = data.clone();
        partial_quicksort(&mut partial, 0, 9, &|a, b| a.cmp(b));
        assert_eq!(partial[..10], expected[..10]);
    }
}
