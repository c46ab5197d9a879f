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

/// Play the initial tournament over `leaves` (k >= 2): (nodes, with the loser of each match at
/// internal node `1..k`, and the overall winner).
fn build<T: Copy>(leaves: &[T], mut less: impl FnMut(&T, &T) -> bool) -> (Vec<T>, T) {
    let k = leaves.len();
    let mut nodes = leaves.to_vec();
    let mut winners = [leaves, leaves].concat();
    for n in (1..k).rev() {
        let (a, b) = (winners[2 * n], winners[2 * n + 1]);
        if less(&b, &a) {
            winners[n] = b;
            nodes[n] = a;
        } else {
            winners[n] = a;
            nodes[n] = b;
        }
    }
    (nodes, winners[1])
}

impl LoserTree {
    /// Build over leaves `0..k`.
    pub fn new(k: usize, mut less: impl FnMut(usize, usize) -> bool) -> Self {
        if k <= 1 {
            return LoserTree { k, tree: vec![0] };
        }
        let leaves: Vec<usize> = (0..k).collect();
        let (mut tree, winner) = build(&leaves, |a, b| less(*a, *b));
        tree[0] = winner;
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
        let tree = &mut self.tree[..];
        let mut w = tree[0];
        let mut n = (w + self.k) / 2;
        while n >= 1 {
            let l = tree[n];
            // select without a data-dependent branch (the comparison is a coin flip for
            // interleaved runs): the loser stays, the winner climbs
            let swap = less(l, w);
            tree[n] = std::hint::select_unpredictable(swap, w, l);
            w = std::hint::select_unpredictable(swap, l, w);
            n /= 2;
        }
        tree[0] = w;
    }
}

/// A loser tree whose nodes hold the losers' sort keys `(key, seq, tie)` (not indices into the
/// leaves), ordered lexicographically; `tie` must be unique per leaf (the caller encodes the leaf
/// index in it). A replay compares the climbing winner, kept in registers, with node keys whose
/// addresses depend only on the leaf, and selects without branches (the outcome of a comparison
/// is a coin flip for interleaved runs): a short dependency chain, no mispredictions. The nodes
/// are kept as three arrays so every select is a scalar conditional move.
#[derive(Debug, Clone)]
pub struct KeyedLoserTree {
    k: usize,
    key: Vec<i64>,
    seq: Vec<i64>,
    tie: Vec<u32>,
    winner: (i64, i64, u32),
}

#[inline(always)]
fn keyed_less(x: (i64, i64, u32), y: (i64, i64, u32)) -> bool {
    // non-short-circuit `&`/`|`: computed without branches
    (x.0 < y.0) | ((x.0 == y.0) & ((x.1 < y.1) | ((x.1 == y.1) & (x.2 < y.2))))
}

impl KeyedLoserTree {
    /// Build over `leaves` (at least one).
    pub fn new(leaves: &[(i64, i64, u32)]) -> Option<Self> {
        let k = leaves.len();
        let first = *leaves.first()?;
        let (nodes, winner) = build(leaves, |a, b| keyed_less(*a, *b));
        Some(KeyedLoserTree {
            k,
            key: nodes.iter().map(|n| n.0).collect(),
            seq: nodes.iter().map(|n| n.1).collect(),
            tie: nodes.iter().map(|n| n.2).collect(),
            winner: if k == 1 { first } else { winner },
        })
    }

    /// The smallest leaf key.
    #[inline(always)]
    pub fn winner(&self) -> (i64, i64, u32) {
        self.winner
    }

    /// Leaf `leaf` (the last winner's) now holds `v`: replay its path to the root.
    #[inline(always)]
    pub fn replay(&mut self, leaf: usize, v: (i64, i64, u32)) {
        use std::hint::select_unpredictable as sel;
        let (key, seq, tie) = (&mut self.key[..], &mut self.seq[..], &mut self.tie[..]);
        let (mut wk, mut ws, mut wt) = v;
        let mut n = (leaf + self.k) / 2;
        while n >= 1 && n < key.len() && n < seq.len() && n < tie.len() {
            let (lk, ls, lt) = (key[n], seq[n], tie[n]);
            let swap = keyed_less((lk, ls, lt), (wk, ws, wt));
            key[n] = sel(swap, wk, lk);
            seq[n] = sel(swap, ws, ls);
            tie[n] = sel(swap, wt, lt);
            wk = sel(swap, lk, wk);
            ws = sel(swap, ls, ws);
            wt = sel(swap, lt, wt);
            n /= 2;
        }
        self.winner = (wk, ws, wt);
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
            proptest::prop_assert_eq!(&out, &expect);
            // the keyed tree: (value, exhausted, leaf); exhausted leaves sort last
            let mut pos = vec![0usize; runs.len()];
            let val = |pos: &[usize], i: usize| match runs[i].get(pos[i]) {
                Some(&v) => (v, 0, i as u32),
                None => (i64::MAX, 1, i as u32),
            };
            let leaves: Vec<_> = (0..runs.len()).map(|i| val(&pos, i)).collect();
            let mut t = KeyedLoserTree::new(&leaves).unwrap();
            let mut out2 = vec![];
            while t.winner().1 == 0 {
                let (v, _, i) = t.winner();
                out2.push(v);
                pos[i as usize] += 1;
                t.replay(i as usize, val(&pos, i as usize));
            }
            proptest::prop_assert_eq!(out2, expect);
        }
    }
}
