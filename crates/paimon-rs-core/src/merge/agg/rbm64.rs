//! `rbm64`: union of Java `Roaring64Bitmap`s as Java Paimon's `FieldRoaringBitmap64Agg` does it.
//!
//! Java Paimon pins RoaringBitmap 1.2.1 and writes `Roaring64Bitmap.serialize(DataOutput)`
//! after `runOptimize()`. That layout has no specification (the Java doc says so); it is the
//! library's in-memory structure written out, read here from the 1.2.1 sources
//! (`longlong.HighLowContainer`, `art.{Art, Node*, LeafNode, Containers}`). All multi-byte
//! fields are little-endian (Java writes them through `Long/Integer/Short.reverseBytes`)
//! except the 6 key bytes of a leaf, which are the big-endian high 48 bits of the values.
//!
//! ```text
//! bitmap    := 0x00                                  (empty: Art has no root)
//!            | 0x01 art containers
//! art       := keySize:i64 node                      (node tree in pre-order)
//! node      := type:u8 count:i16 prefixLen:i8 prefix[prefixLen] body children
//!   type 0 Node4   body = 4 key bytes, slot 3..0      (an int, big-endian packed, written LE)
//!   type 1 Node16  body = key bytes of slots 7..0, then 15..8
//!   type 2 Node48  body = 256-entry key -> slot table (0xFF = none), 8 bytes reversed per long
//!   type 3 Node256 body = 4 x u64 LE bitset of present key bytes
//!   type 4 Leaf    body = key[6] (big-endian high 48 bits) containerIdx:i64
//!   children: `count` nodes, Node4/16 in slot order, Node48/256 in key-byte order
//! containers:= n:i32 { 0xFE len:i32 slot[len] }*n size:i64 firstLevelIdx:i32 secondLevelIdx:i32
//! slot      := 0x00 (null) | 0x01 type:u8 cardinality:i32 payload
//!   type 0 run     payload = nRuns:u16 (start:u16 lengthMinusOne:u16)*nRuns
//!   type 1 bitmap  payload = 1024 x u64 LE
//!   type 2 array   payload = cardinality x u16 LE
//! ```
//!
//! The bytes are not a function of the value set: the container slots are numbered in the
//! order high keys were first added (array capacity grows 1, 2, 3, 4, 6, 9, ... with null
//! slots written out), Node48 slots follow insertion order, and container types depend on
//! history (`runOptimize` only ever turns containers *into* runs). So the union is computed
//! by replaying Java's operations on Java's structure: deserialize the accumulator as laid
//! out, insert the input's high keys in ascending order (`Roaring64Bitmap.or`, ART insertion
//! with node growth 4 -> 16 -> 48 -> 256, `Containers.addContainer`), union shared containers
//! with the result type each `Container.ior` returns, then `runOptimize` and serialize.

use crate::error::{Error, Result};

const KEY_LEN: usize = 6;
const WORDS: usize = 1024;
const MAX_ARRAY: usize = 4096;
const BITMAP_BYTES: usize = 8192;
const FULL: u32 = 1 << 16;
const NO_SLOT: u8 = 0xFF;
const NOT_TRIMMED: u8 = 0xFE;
/// Java's `Containers.MAX_JVM_ARRAY_OFFSET` (`Integer.MAX_VALUE - 9`).
const MAX_JVM_ARRAY_OFFSET: i32 = i32::MAX - 9;

type Res<T> = std::result::Result<T, String>;
type Words = Box<[u64; WORDS]>;

/// Union of two serialized Java `Roaring64Bitmap`s, byte-for-byte what Java Paimon's
/// `FieldRoaringBitmap64Agg.agg(a, b)` returns.
pub fn rbm64_union(field: &str, a: &[u8], b: &[u8]) -> Result<Vec<u8>> {
    let de = |x: &[u8], which: &str| {
        Rbm64::deserialize(x).map_err(|e| {
            Error::invalid(format!(
                "aggregate function 'rbm64' of field '{field}': {which} is not a serialized \
                 Java Roaring64Bitmap: {e}"
            ))
        })
    };
    let mut acc = de(a, "the accumulator")?;
    let inp = de(b, "the input")?;
    acc.or(&inp).map_err(|e| {
        Error::invalid(format!(
            "aggregate function 'rbm64' of field '{field}': inconsistent Roaring64Bitmap: {e}"
        ))
    })?;
    acc.run_optimize();
    Ok(acc.serialize())
}

// ---------------------------------------------------------------------------------------------
// bounds-checked little-endian reader

struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize, what: &str) -> Res<&'a [u8]> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.b.len() => {
                let s = &self.b[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            _ => Err(format!(
                "truncated: {what} needs {n} bytes at offset {}, {} left",
                self.pos,
                self.b.len() - self.pos
            )),
        }
    }
    fn arr<const N: usize>(&mut self, what: &str) -> Res<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }
    fn u8(&mut self, what: &str) -> Res<u8> {
        Ok(self.arr::<1>(what)?[0])
    }
    fn i16(&mut self, what: &str) -> Res<i16> {
        Ok(i16::from_le_bytes(self.arr(what)?))
    }
    fn u16(&mut self, what: &str) -> Res<u16> {
        Ok(u16::from_le_bytes(self.arr(what)?))
    }
    fn i32(&mut self, what: &str) -> Res<i32> {
        Ok(i32::from_le_bytes(self.arr(what)?))
    }
    fn i64(&mut self, what: &str) -> Res<i64> {
        Ok(i64::from_le_bytes(self.arr(what)?))
    }
    /// A non-negative length that cannot exceed what is left at `min_bytes` bytes an entry.
    fn len(&mut self, what: &str, min_bytes: usize) -> Res<usize> {
        let n = self.i32(what)?;
        let n = usize::try_from(n).map_err(|_| format!("negative {what} {n}"))?;
        if n.saturating_mul(min_bytes) > self.b.len() - self.pos {
            return Err(format!("{what} {n} exceeds the remaining bytes"));
        }
        Ok(n)
    }
}

// ---------------------------------------------------------------------------------------------
// containers (the 16-bit low halves)

#[derive(Clone, Debug, PartialEq)]
enum Container {
    /// Sorted distinct values.
    Array(Vec<u16>),
    /// Bits and Java's cardinality field (kept as Java keeps it).
    Bitmap(Words, i32),
    /// Sorted disjoint runs `(start, length - 1)`.
    Run(Vec<(u16, u16)>),
}

fn words_of(c: &Container) -> Words {
    let mut w: Words = Box::new([0u64; WORDS]);
    match c {
        Container::Array(v) => v.iter().for_each(|&x| w[x as usize >> 6] |= 1 << (x & 63)),
        Container::Bitmap(b, _) => w.copy_from_slice(&b[..]),
        Container::Run(r) => {
            for &(s, l) in r {
                for x in s as u32..=s as u32 + l as u32 {
                    w[x as usize >> 6] |= 1 << (x & 63);
                }
            }
        }
    }
    w
}

fn card_of(w: &[u64; WORDS]) -> u32 {
    w.iter().map(|x| x.count_ones()).sum()
}

fn array_of(w: &[u64; WORDS]) -> Vec<u16> {
    let mut v = Vec::new();
    for (i, &word) in w.iter().enumerate() {
        let mut x = word;
        while x != 0 {
            v.push((i * 64 + x.trailing_zeros() as usize) as u16);
            x &= x - 1;
        }
    }
    v
}

/// Maximal runs of a sorted distinct sequence.
fn runs_of(vals: impl IntoIterator<Item = u16>) -> Vec<(u16, u16)> {
    let mut r: Vec<(u16, u16)> = Vec::new();
    for x in vals {
        match r.last_mut() {
            Some((s, l)) if *s as u32 + *l as u32 + 1 == x as u32 => *l += 1,
            _ => r.push((x, 0)),
        }
    }
    r
}

fn run_size(nruns: usize) -> usize {
    2 + 4 * nruns
}

fn full_run() -> Container {
    Container::Run(vec![(0, u16::MAX)])
}

/// `RunContainer.toEfficientContainer` of the set `w`.
fn efficient(w: Words) -> Container {
    let card = card_of(&w) as usize;
    let runs = runs_of(array_of(&w));
    if run_size(runs.len()) <= BITMAP_BYTES.min(2 * card + 2) {
        Container::Run(runs)
    } else if card <= MAX_ARRAY {
        Container::Array(array_of(&w))
    } else {
        Container::Bitmap(w, card as i32)
    }
}

/// Bits of `x` not in `w`, after setting them in `w`.
fn or_into(w: &mut [u64; WORDS], x: &[u64; WORDS]) -> i32 {
    let mut added = 0;
    for (a, b) in w.iter_mut().zip(x.iter()) {
        added += (b & !*a).count_ones() as i32;
        *a |= b;
    }
    added
}

impl Container {
    fn is_full_run(&self) -> bool {
        matches!(self, Container::Run(r) if r.as_slice() == [(0, u16::MAX)])
    }

    /// Java's `Container.ior(other)`: the union, of the container type Java returns.
    fn ior(self, other: &Container) -> Container {
        use Container::*;
        match (self, other) {
            (Array(a), Array(b)) => {
                let mut m = Vec::with_capacity(a.len() + b.len());
                let (mut i, mut j) = (0, 0);
                while i < a.len() || j < b.len() {
                    let x = match (a.get(i), b.get(j)) {
                        (Some(&x), Some(&y)) if x == y => {
                            i += 1;
                            j += 1;
                            x
                        }
                        (Some(&x), Some(&y)) if x < y => {
                            i += 1;
                            x
                        }
                        (Some(&x), None) => {
                            i += 1;
                            x
                        }
                        (_, Some(&y)) => {
                            j += 1;
                            y
                        }
                        (None, None) => break,
                    };
                    m.push(x);
                }
                if m.len() <= MAX_ARRAY {
                    Array(m)
                } else {
                    // toBitmapContainer().lazyIOR(..).repairAfterLazy()
                    let card = m.len() as i32;
                    Bitmap(words_of(&Array(m)), card)
                }
            }
            // BitmapContainer.or(ArrayContainer) / RunContainer.or(BitmapContainer): a copy of
            // the bitmap with its cardinality counted up; full becomes the full run.
            (a @ (Array(_) | Run(_)), Bitmap(bw, bc)) => {
                if a.is_full_run() {
                    return a;
                }
                let mut w = bw.clone();
                let card = *bc + or_into(&mut w, &words_of(&a));
                if card as u32 == FULL {
                    full_run()
                } else {
                    Bitmap(w, card)
                }
            }
            // BitmapContainer.ior(ArrayContainer): in place, no full check.
            (Bitmap(mut w, c), b @ Array(_)) => {
                let card = c + or_into(&mut w, &words_of(b));
                Bitmap(w, card)
            }
            (Bitmap(mut w, c), b) => {
                let added = or_into(&mut w, &words_of(b));
                // ior(BitmapContainer) recounts; ior(RunContainer) counts up
                let card = if matches!(b, Bitmap(..)) {
                    card_of(&w) as i32
                } else {
                    c + added
                };
                if card as u32 == FULL {
                    full_run()
                } else {
                    Bitmap(w, card)
                }
            }
            // RunContainer.ior(*) returns a full run unchanged
            (a @ Run(_), _) if a.is_full_run() => a,
            // RunContainer.or(ArrayContainer), RunContainer.ior(Array|Run):
            // toEfficientContainer of the merged runs
            (a @ (Array(_) | Run(_)), b) => {
                let mut w = words_of(&a);
                or_into(&mut w, &words_of(b));
                efficient(w)
            }
        }
    }

    /// Java's container `runOptimize()` as `Roaring64Bitmap.runOptimize` applies it: the
    /// result replaces the container only when it is a run container.
    fn run_optimize(self) -> Container {
        match self {
            Container::Array(v) => {
                let runs = runs_of(v.iter().copied());
                if 2 * v.len() > run_size(runs.len()) {
                    Container::Run(runs)
                } else {
                    Container::Array(v)
                }
            }
            Container::Bitmap(w, c) => {
                let runs = runs_of(array_of(&w));
                if BITMAP_BYTES > run_size(runs.len()) {
                    Container::Run(runs)
                } else {
                    Container::Bitmap(w, c)
                }
            }
            run => run,
        }
    }

    fn cardinality(&self) -> i32 {
        match self {
            Container::Array(v) => v.len() as i32,
            Container::Bitmap(_, c) => *c,
            Container::Run(r) => r.iter().map(|&(_, l)| l as i32 + 1).sum(),
        }
    }

    fn read(rd: &mut Rd) -> Res<Container> {
        let ty = rd.u8("container type")?;
        let card = rd.i32("container cardinality")?;
        Ok(match ty {
            0 => {
                let n = rd.u16("run count")? as usize;
                let mut r = Vec::with_capacity(n);
                let mut next = 0u32; // smallest value the next run may start at
                for _ in 0..n {
                    let s = rd.u16("run start")?;
                    let l = rd.u16("run length")?;
                    if (s as u32) < next || s as u32 + l as u32 >= FULL {
                        return Err(format!("run container: run ({s}, {l}) out of order"));
                    }
                    next = s as u32 + l as u32 + 1;
                    r.push((s, l));
                }
                Container::Run(r)
            }
            1 => {
                let mut w: Words = Box::new([0u64; WORDS]);
                let bytes = rd.take(8 * WORDS, "bitmap container")?;
                for (x, c) in w.iter_mut().zip(bytes.chunks_exact(8)) {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(c);
                    *x = u64::from_le_bytes(a);
                }
                Container::Bitmap(w, card)
            }
            2 => {
                let n = usize::try_from(card)
                    .ok()
                    .filter(|&n| n <= FULL as usize)
                    .ok_or_else(|| format!("array container cardinality {card}"))?;
                let bytes = rd.take(2 * n, "array container")?;
                let v: Vec<u16> = bytes
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
                if v.windows(2).any(|p| p[0] >= p[1]) {
                    return Err("array container: values not strictly increasing".into());
                }
                Container::Array(v)
            }
            t => return Err(format!("unknown container type {t}")),
        })
    }

    fn write(&self, out: &mut Vec<u8>) {
        let ty = match self {
            Container::Run(_) => 0u8,
            Container::Bitmap(..) => 1,
            Container::Array(_) => 2,
        };
        out.push(ty);
        out.extend_from_slice(&self.cardinality().to_le_bytes());
        match self {
            Container::Run(r) => {
                out.extend_from_slice(&(r.len() as u16).to_le_bytes());
                for &(s, l) in r {
                    out.extend_from_slice(&s.to_le_bytes());
                    out.extend_from_slice(&l.to_le_bytes());
                }
            }
            Container::Bitmap(w, _) => w.iter().for_each(|x| out.extend(x.to_le_bytes())),
            Container::Array(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        }
    }

    #[cfg(test)]
    fn values(&self) -> Vec<u16> {
        match self {
            Container::Array(v) => v.clone(),
            other => array_of(&words_of(other)),
        }
    }
}

/// Java's `art.Containers`: two-level slot arrays, written with their capacity.
#[derive(Clone, Debug)]
struct Containers {
    arrays: Vec<Vec<Option<Container>>>,
    size: i64,
    first: i32,
    second: i32,
}

impl Containers {
    fn new() -> Self {
        Containers {
            arrays: Vec::new(),
            size: 0,
            first: -1,
            second: 0,
        }
    }

    fn split(idx: u64) -> (usize, usize) {
        ((idx >> 32) as usize, (idx & 0xFFFF_FFFF) as usize)
    }

    fn get(&self, idx: u64) -> Option<&Container> {
        let (f, s) = Self::split(idx);
        self.arrays.get(f)?.get(s)?.as_ref()
    }

    fn slot(&mut self, idx: u64) -> Option<&mut Option<Container>> {
        let (f, s) = Self::split(idx);
        self.arrays.get_mut(f)?.get_mut(s)
    }

    /// `Containers.addContainer`.
    fn add(&mut self, c: Container) -> Res<u64> {
        if self.second + 1 == MAX_JVM_ARRAY_OFFSET || self.first == -1 {
            self.arrays.push(vec![None]);
            self.first += 1;
            self.second = 0;
        } else {
            self.second += 1;
        }
        let (f, s) = (self.first as usize, self.second as usize);
        let arr = self
            .arrays
            .get_mut(f)
            .ok_or_else(|| format!("first-level container index {f} out of range"))?;
        if arr.len() < s + 1 {
            let old = arr.len();
            arr.resize((old + (old >> 1)).max(s + 1), None);
        }
        arr[s] = Some(c);
        self.size += 1;
        Ok(((self.first as u64) << 32) | self.second as u32 as u64)
    }

    fn read(rd: &mut Rd) -> Res<Containers> {
        let n = rd.len("container array count", 5)?;
        let mut arrays = Vec::with_capacity(n);
        for _ in 0..n {
            if rd.u8("trim mark")? != NOT_TRIMMED {
                return Err("container array not marked untrimmed (0xFE)".into());
            }
            let len = rd.len("container array length", 1)?;
            let mut arr = Vec::with_capacity(len);
            for _ in 0..len {
                arr.push(match rd.u8("container null mark")? {
                    0 => None,
                    1 => Some(Container::read(rd)?),
                    t => return Err(format!("container null mark {t}")),
                });
            }
            arrays.push(arr);
        }
        let c = Containers {
            arrays,
            size: rd.i64("container count")?,
            first: rd.i32("first-level index")?,
            second: rd.i32("second-level index")?,
        };
        let last_ok = usize::try_from(c.first)
            .ok()
            .and_then(|f| c.arrays.get(f))
            .is_some_and(|a| usize::try_from(c.second).is_ok_and(|s| s < a.len()));
        if !last_ok {
            return Err(format!(
                "container cursor ({}, {}) outside the {} container arrays",
                c.first,
                c.second,
                c.arrays.len()
            ));
        }
        Ok(c)
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.arrays.len() as i32).to_le_bytes());
        for arr in &self.arrays {
            out.push(NOT_TRIMMED);
            out.extend_from_slice(&(arr.len() as i32).to_le_bytes());
            for slot in arr {
                match slot {
                    None => out.push(0),
                    Some(c) => {
                        out.push(1);
                        c.write(out);
                    }
                }
            }
        }
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.first.to_le_bytes());
        out.extend_from_slice(&self.second.to_le_bytes());
    }
}

// ---------------------------------------------------------------------------------------------
// the adaptive radix tree over the high 48 bits

#[derive(Clone, Debug)]
enum Node {
    Leaf {
        /// Header fields as read (a fresh leaf has 0 and none).
        count: i16,
        prefix: Vec<u8>,
        key: [u8; KEY_LEN],
        idx: u64,
    },
    Inner(Box<Inner>),
}

#[derive(Clone, Debug)]
struct Inner {
    prefix: Vec<u8>,
    body: Body,
}

#[derive(Clone, Debug)]
enum Body {
    /// Slot key bytes (unused slots as Java left them) and the children of slots 0..count.
    N4([u8; 4], Vec<Node>),
    N16([u8; 16], Vec<Node>),
    /// Key byte -> slot (NO_SLOT = none), 48 slots, count.
    N48(Box<[u8; 256]>, Vec<Option<Node>>, usize),
    /// Present key bytes, children by key byte, count.
    N256([u64; 4], Vec<Option<Node>>, usize),
}

fn leaf(key: [u8; KEY_LEN], idx: u64) -> Node {
    Node::Leaf {
        count: 0,
        prefix: Vec::new(),
        key,
        idx,
    }
}

/// `java.util.Arrays.mismatch` of two ranges: first differing index, the shorter length when
/// one is a prefix of the other, -1 when equal.
fn mismatch(a: &[u8], b: &[u8]) -> isize {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => i as isize,
        None if a.len() == b.len() => -1,
        None => a.len().min(b.len()) as isize,
    }
}

/// `Node.binarySearch` over unsigned bytes.
fn binary_search(keys: &[u8], k: u8) -> Option<usize> {
    let (mut lo, mut hi) = (0isize, keys.len() as isize - 1);
    while lo <= hi {
        let mid = ((lo + hi) as usize) >> 1;
        match keys[mid].cmp(&k) {
            std::cmp::Ordering::Less => lo = mid as isize + 1,
            std::cmp::Ordering::Greater => hi = mid as isize - 1,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

/// Node4/Node16 insertion below capacity: the key goes to slot `count`, then a stable
/// insertion sort of slots `0..=count` by unsigned key byte (`Node.sortSmallByteArray`).
fn add_sorted(keys: &mut [u8], kids: &mut Vec<Node>, child: Node, k: u8) {
    keys[kids.len()] = k;
    kids.push(child);
    let n = kids.len();
    let mut pairs: Vec<(u8, Node)> = keys[..n].iter().copied().zip(kids.drain(..)).collect();
    pairs.sort_by_key(|p| p.0);
    for (i, (k, c)) in pairs.into_iter().enumerate() {
        keys[i] = k;
        kids.push(c);
    }
}

impl Inner {
    fn count(&self) -> usize {
        match &self.body {
            Body::N4(_, k) | Body::N16(_, k) => k.len(),
            Body::N48(_, _, n) | Body::N256(_, _, n) => *n,
        }
    }

    /// `getChildPos`: the slot of key byte `k` (Node48/256: the key byte itself).
    fn child_pos(&self, k: u8) -> Option<usize> {
        match &self.body {
            Body::N4(keys, kids) => keys[..kids.len()].iter().position(|&x| x == k),
            Body::N16(keys, kids) => {
                let n = kids.len();
                if n <= 8 {
                    binary_search(&keys[..n], k)
                } else {
                    binary_search(&keys[..8], k)
                        .or_else(|| binary_search(&keys[8..n], k).map(|p| p + 8))
                }
            }
            Body::N48(index, _, _) => (index[k as usize] != NO_SLOT).then_some(k as usize),
            Body::N256(mask, _, _) => {
                (mask[k as usize >> 6] >> (k & 63) & 1 == 1).then_some(k as usize)
            }
        }
    }

    fn child_mut(&mut self, pos: usize) -> Option<&mut Node> {
        match &mut self.body {
            Body::N4(_, kids) | Body::N16(_, kids) => kids.get_mut(pos),
            Body::N48(index, slots, _) => slots.get_mut(index[pos] as usize)?.as_mut(),
            Body::N256(_, kids, _) => kids.get_mut(pos)?.as_mut(),
        }
    }

    fn child(&self, pos: usize) -> Option<&Node> {
        match &self.body {
            Body::N4(_, kids) | Body::N16(_, kids) => kids.get(pos),
            Body::N48(index, slots, _) => slots.get(index[pos] as usize)?.as_ref(),
            Body::N256(_, kids, _) => kids.get(pos)?.as_ref(),
        }
    }

    /// Children in Java's iteration order (`getNextLargerPos`).
    fn children(&self) -> Vec<&Node> {
        match &self.body {
            Body::N4(_, kids) | Body::N16(_, kids) => kids.iter().collect(),
            Body::N48(index, slots, _) => index
                .iter()
                .filter(|&&s| s != NO_SLOT)
                .filter_map(|&s| slots.get(s as usize)?.as_ref())
                .collect(),
            Body::N256(_, kids, _) => kids.iter().flatten().collect(),
        }
    }

    /// `Node.insertLeaf` / `Node4.insert` etc.: add `child` under key byte `k`, growing
    /// the node type when full.
    fn insert_child(mut self, child: Node, k: u8) -> Inner {
        self.body = match self.body {
            Body::N4(mut keys, mut kids) if kids.len() < 4 => {
                add_sorted(&mut keys, &mut kids, child, k);
                Body::N4(keys, kids)
            }
            Body::N4(keys, kids) => {
                let mut k16 = [0u8; 16];
                k16[..4].copy_from_slice(&keys);
                let grown = Inner {
                    prefix: self.prefix,
                    body: Body::N16(k16, kids),
                };
                return grown.insert_child(child, k);
            }
            Body::N16(mut keys, mut kids) if kids.len() < 16 => {
                add_sorted(&mut keys, &mut kids, child, k);
                Body::N16(keys, kids)
            }
            Body::N16(keys, kids) => {
                let mut index = Box::new([NO_SLOT; 256]);
                let mut slots: Vec<Option<Node>> = vec![None; 48];
                for (i, c) in kids.into_iter().enumerate() {
                    index[keys[i] as usize] = i as u8;
                    slots[i] = Some(c);
                }
                let grown = Inner {
                    prefix: self.prefix,
                    body: Body::N48(index, slots, 16),
                };
                return grown.insert_child(child, k);
            }
            Body::N48(mut index, mut slots, n) if n < 48 => {
                let mut pos = n;
                if slots[pos].is_some() {
                    pos = slots.iter().position(Option::is_none).unwrap_or(n);
                }
                slots[pos] = Some(child);
                index[k as usize] = pos as u8;
                Body::N48(index, slots, n + 1)
            }
            Body::N48(index, mut slots, n) => {
                let mut mask = [0u64; 4];
                let mut kids: Vec<Option<Node>> = vec![None; 256];
                for (key, &s) in index.iter().enumerate() {
                    if s != NO_SLOT {
                        kids[key] = slots.get_mut(s as usize).and_then(Option::take);
                        mask[key >> 6] |= 1 << (key & 63);
                    }
                }
                let grown = Inner {
                    prefix: self.prefix,
                    body: Body::N256(mask, kids, n),
                };
                return grown.insert_child(child, k);
            }
            Body::N256(mut mask, mut kids, n) => {
                kids[k as usize] = Some(child);
                mask[k as usize >> 6] |= 1 << (k & 63);
                Body::N256(mask, kids, n + 1)
            }
        };
        self
    }
}

fn new_n4(prefix: &[u8]) -> Inner {
    Inner {
        prefix: prefix.to_vec(),
        body: Body::N4([0; 4], Vec::with_capacity(4)),
    }
}

/// `Art.insert(node, key, depth, containerIdx)`.
fn insert(node: Node, key: &[u8; KEY_LEN], depth: usize, idx: u64) -> Res<Node> {
    let dup = || format!("high key {key:?} inserted twice");
    match node {
        Node::Leaf {
            count,
            key: lk,
            idx: li,
            ..
        } => {
            let common = mismatch(&lk[depth..], &key[depth..]);
            let c = usize::try_from(common).map_err(|_| dup())?;
            if depth + c >= KEY_LEN {
                return Err(dup());
            }
            let old = Node::Leaf {
                count,
                prefix: Vec::new(),
                key: lk,
                idx: li,
            };
            let n4 = new_n4(&key[depth..depth + c])
                .insert_child(old, lk[depth + c])
                .insert_child(leaf(*key, idx), key[depth + c]);
            Ok(Node::Inner(Box::new(n4)))
        }
        Node::Inner(mut inner) => {
            let mut depth = depth;
            let plen = inner.prefix.len();
            if plen > 0 {
                let mm = mismatch(&inner.prefix, &key[depth.min(KEY_LEN)..]);
                if mm != plen as isize {
                    let m = usize::try_from(mm).map_err(|_| dup())?;
                    if depth + m >= KEY_LEN {
                        return Err(dup());
                    }
                    let kb = inner.prefix[m];
                    let n4 = new_n4(&inner.prefix[..m]);
                    inner.prefix = inner.prefix[m + 1..].to_vec();
                    let n4 = n4
                        .insert_child(Node::Inner(inner), kb)
                        .insert_child(leaf(*key, idx), key[m + depth]);
                    return Ok(Node::Inner(Box::new(n4)));
                }
                depth += plen;
            }
            let k = *key.get(depth).ok_or_else(dup)?;
            match inner.child_pos(k) {
                Some(pos) => {
                    let slot = inner.child_mut(pos).ok_or("missing child")?;
                    let child = std::mem::replace(slot, leaf([0; KEY_LEN], 0));
                    *slot = insert(child, key, depth + 1, idx)?;
                    Ok(Node::Inner(inner))
                }
                None => Ok(Node::Inner(Box::new(
                    inner.insert_child(leaf(*key, idx), k),
                ))),
            }
        }
    }
}

/// `Art.findByKey`.
fn find(root: Option<&Node>, key: &[u8; KEY_LEN]) -> Option<u64> {
    let mut node = root?;
    let mut depth = 0;
    loop {
        match node {
            Node::Leaf { key: lk, idx, .. } => {
                return (depth >= KEY_LEN || lk[depth..] == key[depth..]).then_some(*idx);
            }
            Node::Inner(inner) => {
                let plen = inner.prefix.len();
                if plen > 0 {
                    if mismatch(&key[depth.min(KEY_LEN)..], &inner.prefix) != plen as isize {
                        return None;
                    }
                    depth += plen;
                }
                let pos = inner.child_pos(*key.get(depth)?)?;
                node = inner.child(pos)?;
                depth += 1;
            }
        }
    }
}

fn leaves<'a>(n: &'a Node, out: &mut Vec<(&'a [u8; KEY_LEN], u64)>) {
    match n {
        Node::Leaf { key, idx, .. } => out.push((key, *idx)),
        Node::Inner(inner) => inner.children().into_iter().for_each(|c| leaves(c, out)),
    }
}

fn read_node(rd: &mut Rd, depth: usize) -> Res<Node> {
    let ty = rd.u8("node type")?;
    let count = rd.i16("node child count")?;
    let plen = rd.u8("node prefix length")?;
    if plen as usize > KEY_LEN {
        return Err(format!("node prefix length {}", plen as i8));
    }
    let prefix = rd.take(plen as usize, "node prefix")?.to_vec();
    if ty == 4 {
        let key = rd.arr::<KEY_LEN>("leaf key")?;
        let idx = rd.i64("leaf container index")? as u64;
        return Ok(Node::Leaf {
            count,
            prefix,
            key,
            idx,
        });
    }
    let n = usize::try_from(count).map_err(|_| format!("negative child count {count}"))?;
    let depth = depth + plen as usize + 1;
    if depth > KEY_LEN {
        return Err("inner nodes deeper than the 6 key bytes".into());
    }
    let kids = |rd: &mut Rd| {
        (0..n)
            .map(|_| read_node(rd, depth))
            .collect::<Res<Vec<_>>>()
    };
    let body = match ty {
        0 | 1 => {
            let cap = if ty == 0 { 4 } else { 16 };
            if n > cap {
                return Err(format!("{n} children in a node of {cap}"));
            }
            let raw = rd.take(cap, "node keys")?;
            let mut keys = [0u8; 16];
            // an int (Node4) or two longs (Node16), big-endian packed, written reversed
            for (i, key) in keys.iter_mut().enumerate().take(cap) {
                *key = raw[(i / 8) * 8 + (cap.min(8) - 1 - i % 8)];
            }
            let kids = kids(rd)?;
            if ty == 0 {
                let mut k4 = [0u8; 4];
                k4.copy_from_slice(&keys[..4]);
                Body::N4(k4, kids)
            } else {
                Body::N16(keys, kids)
            }
        }
        2 => {
            let raw = rd.take(256, "Node48 index")?;
            let mut index = Box::new([NO_SLOT; 256]);
            for (i, s) in index.iter_mut().enumerate() {
                *s = raw[(i / 8) * 8 + 7 - i % 8];
            }
            let used: Vec<u8> = index.iter().copied().filter(|&s| s != NO_SLOT).collect();
            let mut seen = [false; 48];
            for &s in &used {
                if s as usize >= 48 || std::mem::replace(&mut seen[s as usize], true) {
                    return Err(format!("Node48 slot {s} invalid or repeated"));
                }
            }
            if used.len() != n {
                return Err(format!("Node48 has {} keys but count {n}", used.len()));
            }
            let mut slots: Vec<Option<Node>> = vec![None; 48];
            for (s, c) in used.into_iter().zip(kids(rd)?) {
                slots[s as usize] = Some(c);
            }
            Body::N48(index, slots, n)
        }
        3 => {
            let mut mask = [0u64; 4];
            for m in mask.iter_mut() {
                *m = rd.i64("Node256 mask")? as u64;
            }
            if mask.iter().map(|m| m.count_ones() as usize).sum::<usize>() != n {
                return Err(format!("Node256 mask disagrees with count {n}"));
            }
            let mut slots: Vec<Option<Node>> = vec![None; 256];
            let keys: Vec<usize> = (0..256)
                .filter(|&k| mask[k >> 6] >> (k & 63) & 1 == 1)
                .collect();
            for (k, c) in keys.into_iter().zip(kids(rd)?) {
                slots[k] = Some(c);
            }
            Body::N256(mask, slots, n)
        }
        t => return Err(format!("unknown ART node type {t}")),
    };
    Ok(Node::Inner(Box::new(Inner { prefix, body })))
}

fn write_node(n: &Node, out: &mut Vec<u8>) {
    let header = |out: &mut Vec<u8>, ty: u8, count: i16, prefix: &[u8]| {
        out.push(ty);
        out.extend_from_slice(&count.to_le_bytes());
        out.push(prefix.len() as u8);
        out.extend_from_slice(prefix);
    };
    match n {
        Node::Leaf {
            count,
            prefix,
            key,
            idx,
        } => {
            header(out, 4, *count, prefix);
            out.extend_from_slice(key);
            out.extend_from_slice(&idx.to_le_bytes());
        }
        Node::Inner(inner) => {
            let count = inner.count() as i16;
            match &inner.body {
                Body::N4(keys, _) => {
                    header(out, 0, count, &inner.prefix);
                    out.extend(keys.iter().rev());
                }
                Body::N16(keys, _) => {
                    header(out, 1, count, &inner.prefix);
                    out.extend(keys[..8].iter().rev());
                    out.extend(keys[8..].iter().rev());
                }
                Body::N48(index, _, _) => {
                    header(out, 2, count, &inner.prefix);
                    index
                        .chunks_exact(8)
                        .for_each(|c| out.extend(c.iter().rev()));
                }
                Body::N256(mask, _, _) => {
                    header(out, 3, count, &inner.prefix);
                    mask.iter().for_each(|m| out.extend(m.to_le_bytes()));
                }
            }
            inner
                .children()
                .into_iter()
                .for_each(|c| write_node(c, out));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the bitmap

/// Java's `Roaring64Bitmap` state: its ART, key count and container slots.
#[derive(Clone, Debug)]
pub(crate) struct Rbm64 {
    root: Option<Node>,
    key_size: i64,
    containers: Containers,
}

impl Rbm64 {
    fn new() -> Self {
        Rbm64 {
            root: None,
            key_size: 0,
            containers: Containers::new(),
        }
    }

    pub(crate) fn deserialize(b: &[u8]) -> Res<Rbm64> {
        let mut rd = Rd { b, pos: 0 };
        match rd.u8("empty tag")? {
            0 => return Ok(Rbm64::new()),
            1 => {}
            t => return Err(format!("unknown tag byte {t} (expected 0 or 1)")),
        }
        let key_size = rd.i64("key count")?;
        let root = read_node(&mut rd, 0)?;
        let containers = Containers::read(&mut rd)?;
        let mut ls = Vec::new();
        leaves(&root, &mut ls);
        if let Some((k, i)) = ls.iter().find(|(_, i)| containers.get(*i).is_none()) {
            return Err(format!(
                "leaf {k:?} points at container {i:#x}, which is absent"
            ));
        }
        Ok(Rbm64 {
            root: Some(root),
            key_size,
            containers,
        })
    }

    /// `Roaring64Bitmap.or`: the other's high keys in its iteration order.
    pub(crate) fn or(&mut self, other: &Rbm64) -> Res<()> {
        let mut ls = Vec::new();
        if let Some(r) = &other.root {
            leaves(r, &mut ls);
        }
        for (key, oidx) in ls {
            let theirs = other.containers.get(oidx).ok_or("absent container")?;
            match find(self.root.as_ref(), key) {
                Some(idx) => {
                    let slot = self.containers.slot(idx).ok_or("absent container")?;
                    let mine = slot.take().ok_or("absent container")?;
                    *slot = Some(mine.ior(theirs));
                }
                None => {
                    let idx = self.containers.add(theirs.clone())?;
                    self.root = Some(match self.root.take() {
                        None => leaf(*key, idx),
                        Some(r) => insert(r, key, 0, idx)?,
                    });
                    self.key_size += 1;
                }
            }
        }
        Ok(())
    }

    /// `Roaring64Bitmap.runOptimize` (its `ContainerIterator` visits nothing when the
    /// container count field is not positive).
    pub(crate) fn run_optimize(&mut self) {
        if self.containers.size <= 0 {
            return;
        }
        for slot in self.containers.arrays.iter_mut().flatten() {
            if let Some(c) = slot.take() {
                *slot = Some(c.run_optimize());
            }
        }
    }

    pub(crate) fn serialize(&self) -> Vec<u8> {
        let Some(root) = &self.root else {
            return vec![0];
        };
        let mut out = vec![1];
        out.extend_from_slice(&self.key_size.to_le_bytes());
        write_node(root, &mut out);
        self.containers.write(&mut out);
        out
    }

    /// The values, in ART order (ascending for any tree Java builds).
    #[cfg(test)]
    pub(crate) fn values(&self) -> Vec<u64> {
        let mut ls = Vec::new();
        if let Some(r) = &self.root {
            leaves(r, &mut ls);
        }
        let mut v = Vec::new();
        for (key, idx) in ls {
            let mut hb = [0u8; 8];
            hb[..KEY_LEN].copy_from_slice(key);
            let high = u64::from_be_bytes(hb);
            if let Some(c) = self.containers.get(idx) {
                v.extend(c.values().into_iter().map(|lo| high | lo as u64));
            }
        }
        v
    }

    /// `Roaring64Bitmap.addLong` for each value in turn (what Paimon's
    /// `RoaringBitmap64.bitmapOf` does), then `runOptimize` as `RoaringBitmap64.serialize`.
    #[cfg(test)]
    pub(crate) fn java_bitmap_of(vals: &[u64]) -> Rbm64 {
        let mut b = Rbm64::new();
        for &x in vals {
            let hb = x.to_be_bytes();
            let mut key = [0u8; KEY_LEN];
            key.copy_from_slice(&hb[..KEY_LEN]);
            let low = x as u16;
            match find(b.root.as_ref(), &key) {
                Some(idx) => {
                    let slot = b.containers.slot(idx).expect("own container");
                    let c = match slot.take().expect("own container") {
                        Container::Array(mut v) => match v.binary_search(&low) {
                            Ok(_) => Container::Array(v),
                            Err(_) if v.len() >= MAX_ARRAY => {
                                let mut w = words_of(&Container::Array(v));
                                w[low as usize >> 6] |= 1 << (low & 63);
                                Container::Bitmap(w, MAX_ARRAY as i32 + 1)
                            }
                            Err(p) => {
                                v.insert(p, low);
                                Container::Array(v)
                            }
                        },
                        Container::Bitmap(mut w, c) => {
                            let bit = 1u64 << (low & 63);
                            let new = w[low as usize >> 6] & bit == 0;
                            w[low as usize >> 6] |= bit;
                            Container::Bitmap(w, c + new as i32)
                        }
                        run => run.ior(&Container::Array(vec![low])),
                    };
                    *slot = Some(c);
                }
                None => {
                    let idx = b.containers.add(Container::Array(vec![low])).expect("add");
                    b.root = Some(match b.root.take() {
                        None => leaf(key, idx),
                        Some(r) => insert(r, &key, 0, idx).expect("insert"),
                    });
                    b.key_size += 1;
                }
            }
        }
        b.run_optimize();
        b
    }
}

#[cfg(test)]
mod tests;
