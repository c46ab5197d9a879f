//! A loser tree (tournament tree) over `k` leaves: the winner is the smallest leaf by a caller's
//! `less`; after the winner's value changed (advanced or exhausted) one root-ward replay of
//! `log2(k)` comparisons restores the tree. Works for any `k >= 1` (heap-shaped tree, leaves at
//! positions `k..2k`, internal nodes `1..k` hold the losers, slot 0 the overall winner).
//!
//! The tree knows nothing about records: exhausted leaves must compare greater than every live
//! leaf, and ties must be broken by the caller (we break them on the leaf index) so the order is
//! total and deterministic.

#[derive(Debug, Clone)]
pub struct LoserTree {
    k: usize,
    tree: Vec<usize>,
}

impl LoserTree {
    /// Build over leaves `0..k`.
    pub fn new(k: usize, mut less: impl FnMut(usize, usize) -> bool) -> Self {
        if k <= 1 {
            return LoserTree { k, tree: vec![0] };
        }
        let mut tree = vec![0usize; k];
        let mut winners = vec![0usize; 2 * k];
        for (i, w) in winners[k..].iter_mut().enumerate() {
            *w = i;
        }
        for n in (1..k).rev() {
            let (a, b) = (winners[2 * n], winners[2 * n + 1]);
            if less(b, a) {
                winners[n] = b;
                tree[n] = a;
            } else {
                winners[n] = a;
                tree[n] = b;
            }
        }
        tree[0] = winners[1];
        LoserTree { k, tree }
    }

    /// The current winner (smallest leaf).
    #[inline]
    pub fn winner(&self) -> usize {
        self.tree[0]
    }

    /// The winner's value changed: replay its path to the root.
    #[inline]
    pub fn replay(&mut self, mut less: impl FnMut(usize, usize) -> bool) {
        if self.k <= 1 {
            return;
        }
        let mut w = self.tree[0];
        let mut n = (w + self.k) / 2;
        while n >= 1 {
            let l = self.tree[n];
            if less(l, w) {
                self.tree[n] = w;
                w = l;
            }
            n /= 2;
        }
        self.tree[0] = w;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Popping the winner repeatedly yields the same sequence as sorting everything.
        #[test]
        fn loser_tree_equals_sort(runs in proptest::collection::vec(
            proptest::collection::vec(-20i64..20, 0..30), 1..12)) {
            let runs: Vec<Vec<i64>> = runs.into_iter().map(|mut r| { r.sort(); r }).collect();
            let mut pos = vec![0usize; runs.len()];
            let cur = |pos: &[usize], i: usize| runs[i].get(pos[i]).copied();
            let less = |pos: &[usize], a: usize, b: usize| match (cur(pos, a), cur(pos, b)) {
                (Some(x), Some(y)) => (x, a) < (y, b),
                (Some(_), None) => true,
                _ => false,
            };
            let mut t = LoserTree::new(runs.len(), |a, b| less(&pos, a, b));
            let mut out = vec![];
            loop {
                let w = t.winner();
                let Some(v) = cur(&pos, w) else { break };
                out.push(v);
                pos[w] += 1;
                t.replay(|a, b| less(&pos, a, b));
            }
            let mut expect: Vec<i64> = runs.concat();
            expect.sort();
            proptest::prop_assert_eq!(out, expect);
        }
    }
}
