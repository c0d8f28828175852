//! Go's `sort.Sort`, exactly: the order it leaves elements that compare equal in.
//!
//! Karmada sorts some lists with `sort.Sort` under a comparator with ties (target clusters by
//! replicas only), and `sort.Sort` is not stable: for more than 12 elements the order of equal
//! elements is whatever Go's algorithm produces. To break those ties as Karmada does, this is
//! a faithful port of the algorithm of Go's standard library (`src/sort/sort.go` and
//! `src/sort/zsortinterface.go`, Copyright The Go Authors, BSD-style licence): pattern-defeating
//! quicksort (Go ≥ 1.19) — insertion sort up to 12 elements, then pdqsort with a deterministic
//! pattern breaker (a xorshift seeded with the length), falling back to heapsort. The xorshift
//! shifts are Go ≥ 1.24's (13, 7, 17; Go 1.19–1.23 used 13, 17, 5, golang/go#70144); Karmada
//! builds with Go 1.26. Same input, same comparator ⇒ the same permutation Go gives: the tests
//! check 186 permutations Go produced (`gosort/go_vectors.txt`, made by `go_vectors.sh` from
//! Go's own sources; not part of the build).
//!
//! Use it only where Karmada uses `sort.Sort`/`sort.Slice`; where Karmada uses
//! `sort.Stable`/`sort.SliceStable`, a stable sort with the same keys is what it means.

/// Sorts `data` as Go's `sort.Sort` does with `Less(i, j) = less(&data[i], &data[j])`.
pub fn sort_by<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = data.len() as isize;
    if n <= 1 {
        return;
    }
    let mut s = Sorter { data, less };
    let limit = bits_len(n as u64) as isize;
    s.pdqsort(0, n, limit);
}

/// Go's `bits.Len`: the number of bits needed to represent `x`.
fn bits_len(x: u64) -> u32 {
    64 - x.leading_zeros()
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Hint {
    Unknown,
    Increasing,
    Decreasing,
}

/// Go's `sort.Interface` over a slice; indices are signed like Go's `int`.
struct Sorter<'a, T, F: Fn(&T, &T) -> bool> {
    data: &'a mut [T],
    less: F,
}

impl<T, F: Fn(&T, &T) -> bool> Sorter<'_, T, F> {
    fn less(&self, i: isize, j: isize) -> bool {
        (self.less)(&self.data[i as usize], &self.data[j as usize])
    }

    fn swap(&mut self, i: isize, j: isize) {
        self.data.swap(i as usize, j as usize);
    }

    fn insertion_sort(&mut self, a: isize, b: isize) {
        let mut i = a + 1;
        while i < b {
            let mut j = i;
            while j > a && self.less(j, j - 1) {
                self.swap(j, j - 1);
                j -= 1;
            }
            i += 1;
        }
    }

    fn sift_down(&mut self, lo: isize, hi: isize, first: isize) {
        let mut root = lo;
        loop {
            let mut child = 2 * root + 1;
            if child >= hi {
                break;
            }
            if child + 1 < hi && self.less(first + child, first + child + 1) {
                child += 1;
            }
            if !self.less(first + root, first + child) {
                return;
            }
            self.swap(first + root, first + child);
            root = child;
        }
    }

    fn heap_sort(&mut self, a: isize, b: isize) {
        let first = a;
        let lo = 0;
        let hi = b - a;
        let mut i = (hi - 1) / 2;
        while i >= 0 {
            self.sift_down(i, hi, first);
            i -= 1;
        }
        let mut i = hi - 1;
        while i >= 0 {
            self.swap(first, first + i);
            self.sift_down(lo, i, first);
            i -= 1;
        }
    }

    fn pdqsort(&mut self, mut a: isize, mut b: isize, mut limit: isize) {
        const MAX_INSERTION: isize = 12;
        let mut was_balanced = true;
        let mut was_partitioned = true;
        loop {
            let length = b - a;
            if length <= MAX_INSERTION {
                self.insertion_sort(a, b);
                return;
            }
            if limit == 0 {
                self.heap_sort(a, b);
                return;
            }
            if !was_balanced {
                self.break_patterns(a, b);
                limit -= 1;
            }
            let (mut pivot, mut hint) = self.choose_pivot(a, b);
            if hint == Hint::Decreasing {
                self.reverse_range(a, b);
                pivot = (b - 1) - (pivot - a);
                hint = Hint::Increasing;
            }
            if was_balanced && was_partitioned && hint == Hint::Increasing && self.partial_insertion_sort(a, b) {
                return;
            }
            if a > 0 && !self.less(a - 1, pivot) {
                a = self.partition_equal(a, b, pivot);
                continue;
            }
            let (mid, already) = self.partition(a, b, pivot);
            was_partitioned = already;
            let (left, right) = (mid - a, b - mid);
            let balance_threshold = length / 8;
            if left < right {
                was_balanced = left >= balance_threshold;
                self.pdqsort(a, mid, limit);
                a = mid + 1;
            } else {
                was_balanced = right >= balance_threshold;
                self.pdqsort(mid + 1, b, limit);
                b = mid;
            }
        }
    }

    fn partition(&mut self, a: isize, b: isize, pivot: isize) -> (isize, bool) {
        self.swap(a, pivot);
        let (mut i, mut j) = (a + 1, b - 1);
        while i <= j && self.less(i, a) {
            i += 1;
        }
        while i <= j && !self.less(j, a) {
            j -= 1;
        }
        if i > j {
            self.swap(j, a);
            return (j, true);
        }
        self.swap(i, j);
        i += 1;
        j -= 1;
        loop {
            while i <= j && self.less(i, a) {
                i += 1;
            }
            while i <= j && !self.less(j, a) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
        self.swap(j, a);
        (j, false)
    }

    fn partition_equal(&mut self, a: isize, b: isize, pivot: isize) -> isize {
        self.swap(a, pivot);
        let (mut i, mut j) = (a + 1, b - 1);
        loop {
            while i <= j && !self.less(a, i) {
                i += 1;
            }
            while i <= j && self.less(a, j) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
        i
    }

    fn partial_insertion_sort(&mut self, a: isize, b: isize) -> bool {
        const MAX_STEPS: usize = 5;
        const SHORTEST_SHIFTING: isize = 50;
        let mut i = a + 1;
        for _ in 0..MAX_STEPS {
            while i < b && !self.less(i, i - 1) {
                i += 1;
            }
            if i == b {
                return true;
            }
            if b - a < SHORTEST_SHIFTING {
                return false;
            }
            self.swap(i, i - 1);
            // Shift the smaller one to the left. (Go stops at index 1, not a + 1.)
            if i - a >= 2 {
                let mut j = i - 1;
                while j >= 1 {
                    if !self.less(j, j - 1) {
                        break;
                    }
                    self.swap(j, j - 1);
                    j -= 1;
                }
            }
            // Shift the greater one to the right.
            if b - i >= 2 {
                let mut j = i + 1;
                while j < b {
                    if !self.less(j, j - 1) {
                        break;
                    }
                    self.swap(j, j - 1);
                    j += 1;
                }
            }
        }
        false
    }

    fn break_patterns(&mut self, a: isize, b: isize) {
        let length = b - a;
        if length >= 8 {
            let mut random = length as u64;
            let modulus = 1u64 << bits_len(length as u64);
            let mut idx = a + (length / 4) * 2 - 1;
            while idx <= a + (length / 4) * 2 + 1 {
                random ^= random << 13;
                random ^= random >> 7;
                random ^= random << 17;
                let mut other = (random & (modulus - 1)) as isize;
                if other >= length {
                    other -= length;
                }
                self.swap(idx, a + other);
                idx += 1;
            }
        }
    }

    fn choose_pivot(&mut self, a: isize, b: isize) -> (isize, Hint) {
        const SHORTEST_NINTHER: isize = 50;
        const MAX_SWAPS: usize = 4 * 3;
        let l = b - a;
        let mut swaps = 0usize;
        let mut i = a + l / 4;
        let mut j = a + l / 4 * 2;
        let mut k = a + l / 4 * 3;
        if l >= 8 {
            if l >= SHORTEST_NINTHER {
                i = self.median(i - 1, i, i + 1, &mut swaps);
                j = self.median(j - 1, j, j + 1, &mut swaps);
                k = self.median(k - 1, k, k + 1, &mut swaps);
            }
            j = self.median(i, j, k, &mut swaps);
        }
        match swaps {
            0 => (j, Hint::Increasing),
            MAX_SWAPS => (j, Hint::Decreasing),
            _ => (j, Hint::Unknown),
        }
    }

    fn order2(&self, a: isize, b: isize, swaps: &mut usize) -> (isize, isize) {
        if self.less(b, a) {
            *swaps += 1;
            return (b, a);
        }
        (a, b)
    }

    fn median(&self, a: isize, b: isize, c: isize, swaps: &mut usize) -> isize {
        let (a, b) = self.order2(a, b, swaps);
        let (b, _c) = self.order2(b, c, swaps);
        let (_, b) = self.order2(a, b, swaps);
        b
    }

    fn reverse_range(&mut self, a: isize, b: isize) {
        let (mut i, mut j) = (a, b - 1);
        while i < j {
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests;
