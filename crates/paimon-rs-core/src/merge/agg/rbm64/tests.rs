//! Byte vectors below are hand-traced from the RoaringBitmap 1.2.1 Java sources (no JVM here);
//! `paimon_field_aggregator_test` mirrors an equality Java Paimon's own test asserts.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

fn ser(vals: &[u64]) -> Vec<u8> {
    Rbm64::java_bitmap_of(vals).serialize()
}

fn union(a: &[u8], b: &[u8]) -> Vec<u8> {
    rbm64_union("f", a, b).unwrap()
}

fn values(b: &[u8]) -> Vec<u64> {
    Rbm64::deserialize(b).unwrap().values()
}

/// Little-endian helpers for writing expected vectors by hand.
fn le8(x: u64) -> Vec<u8> {
    x.to_le_bytes().to_vec()
}
fn le4(x: u32) -> Vec<u8> {
    x.to_le_bytes().to_vec()
}
fn leaf_bytes(key: [u8; 6], idx: u64) -> Vec<u8> {
    [vec![4, 0, 0, 0], key.to_vec(), le8(idx)].concat()
}
/// One first-level container array of `cap` slots, `slots` filled, then the cursor.
fn containers(cap: u32, slots: &[Vec<u8>]) -> Vec<u8> {
    let mut v = [le4(1), vec![0xFE], le4(cap)].concat();
    for s in slots {
        v.extend([vec![1], s.clone()].concat());
    }
    v.extend(vec![0u8; cap as usize - slots.len()]);
    [
        v,
        le8(slots.len() as u64),
        le4(0),
        le4(slots.len() as u32 - 1),
    ]
    .concat()
}
fn array(vals: &[u16]) -> Vec<u8> {
    let mut v = [vec![2], le4(vals.len() as u32)].concat();
    vals.iter().for_each(|x| v.extend(x.to_le_bytes()));
    v
}

#[test]
fn empty_bitmap_is_one_zero_byte() {
    assert_eq!(ser(&[]), vec![0]);
    assert_eq!(union(&[0], &[0]), vec![0]);
    assert!(values(&[0]).is_empty());
}

#[test]
fn single_value_layout() {
    // tag, keySize 1, a leaf as root, one container array of capacity 1
    let want = [
        vec![1],
        le8(1),
        leaf_bytes([0; 6], 0),
        containers(1, &[array(&[1])]),
    ]
    .concat();
    assert_eq!(ser(&[1]), want);
    assert_eq!(values(&want), vec![1]);
}

#[test]
fn paimon_field_aggregator_test() {
    // FieldAggregatorTest.testFieldRoaringBitmap64Agg asserts
    // agg(bitmapOf(2, 3), bitmapOf(1)) == bitmapOf(1, 2, 3) byte for byte.
    let got = union(&ser(&[2, 3]), &ser(&[1]));
    assert_eq!(got, ser(&[1, 2, 3]));
    // three values in one run: an array (6 bytes) is not larger than a run (6 bytes)
    let want = [
        vec![1],
        le8(1),
        leaf_bytes([0; 6], 0),
        containers(1, &[array(&[1, 2, 3])]),
    ]
    .concat();
    assert_eq!(got, want);
    // RoaringBitmapAggAggregationITCase: agg(bitmapOf(1), bitmapOf(2)) == bitmapOf(1, 2)
    assert_eq!(union(&ser(&[1]), &ser(&[2])), ser(&[1, 2]));
}

#[test]
fn two_high_keys_share_a_prefix() {
    // keys 00..00 and 00..01: a Node4 with the 5 shared bytes as prefix, slots [0x00, 0x01]
    let want = [
        vec![1],
        le8(2),
        vec![0, 2, 0, 5, 0, 0, 0, 0, 0],
        vec![0, 0, 1, 0], // slot keys 3..0
        leaf_bytes([0; 6], 0),
        leaf_bytes([0, 0, 0, 0, 0, 1], 1),
        containers(2, &[array(&[1]), array(&[1])]),
    ]
    .concat();
    assert_eq!(ser(&[1, (1 << 16) | 1]), want);
    assert_eq!(values(&want), vec![1, (1 << 16) | 1]);
}

#[test]
fn five_high_keys_make_a_node16_and_a_null_slot() {
    let vals: Vec<u64> = (0..5).map(|k| k << 16).collect();
    let mut want = [
        vec![1],
        le8(5),
        vec![1, 5, 0, 5, 0, 0, 0, 0, 0],
        vec![0, 0, 0, 4, 3, 2, 1, 0], // slots 7..0
        vec![0; 8],                   // slots 15..8
    ]
    .concat();
    for k in 0..5u8 {
        want.extend(leaf_bytes([0, 0, 0, 0, 0, k], k as u64));
    }
    // capacities grow 1, 2, 3, 4, 6: the sixth slot is written as null
    want.extend(containers(6, &vec![array(&[0]); 5]));
    assert_eq!(ser(&vals), want);
}

#[test]
fn container_slots_follow_insertion_order() {
    // adding high keys 9, 1, 5: containers 0, 1, 2; the Node4 is sorted by key byte
    let b = ser(&[9 << 16, 1 << 16, 5 << 16]);
    let want = [
        vec![1],
        le8(3),
        vec![0, 3, 0, 5, 0, 0, 0, 0, 0],
        vec![0, 9, 5, 1],
        leaf_bytes([0, 0, 0, 0, 0, 1], 1),
        leaf_bytes([0, 0, 0, 0, 0, 5], 2),
        leaf_bytes([0, 0, 0, 0, 0, 9], 0),
        containers(3, &vec![array(&[0]); 3]),
    ]
    .concat();
    assert_eq!(b, want);
    // a union appends the input's new keys after the accumulator's containers
    assert_eq!(union(&ser(&[9 << 16]), &ser(&[1 << 16, 5 << 16])), want);
    assert_ne!(union(&ser(&[1 << 16]), &ser(&[5 << 16, 9 << 16])), want);
}

#[test]
fn node48_and_node256() {
    let vals: Vec<u64> = (0..17).map(|k| k << 16).collect();
    let b = ser(&vals);
    assert_eq!(&b[9..13], &[2, 17, 0, 5]); // Node48, 17 children, 5 prefix bytes
    let index = &b[18..18 + 256];
    assert_eq!(&index[..8], &[7, 6, 5, 4, 3, 2, 1, 0]);
    assert_eq!(&index[8..16], &[15, 14, 13, 12, 11, 10, 9, 8]);
    assert_eq!(
        &index[16..24],
        &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 16]
    );
    assert!(index[24..].iter().all(|&x| x == 0xFF));
    assert_eq!(values(&b), vals);

    let vals: Vec<u64> = (0..49).map(|k| k << 16).collect();
    let b = ser(&vals);
    assert_eq!(&b[9..13], &[3, 49, 0, 5]);
    let mask = u64::from_le_bytes(b[18..26].try_into().unwrap());
    assert_eq!(mask, (1u64 << 49) - 1);
    assert!(b[26..50].iter().all(|&x| x == 0));
    assert_eq!(values(&b), vals);

    // Node48 slots follow insertion order: inserted descending, the Node16 that grows holds
    // keys 1..=16 sorted in slots 0..15, and key 0 (inserted last) takes slot 16
    let desc: Vec<u64> = (0..17).rev().map(|k| k << 16).collect();
    let b = ser(&desc);
    assert_eq!(b[9], 2);
    let index = &b[18..18 + 256];
    assert_eq!(index[23], 15); // key 16: the last byte of the third long, written first
    assert_eq!(index[7], 16); // key 0
}

#[test]
fn run_array_and_bitmap_containers() {
    // 10 consecutive values: array of 20 bytes > run of 6 bytes -> a run container
    let vals: Vec<u64> = (0..10).collect();
    let run = [vec![0], le4(10), vec![1, 0, 0, 0, 9, 0]].concat();
    let want = [
        vec![1],
        le8(1),
        leaf_bytes([0; 6], 0),
        containers(1, &[run]),
    ]
    .concat();
    assert_eq!(ser(&vals), want);
    // 5000 even values: past 4096 the array becomes a bitmap; 5000 runs are too many
    let even: Vec<u64> = (0..5000).map(|x| 2 * x).collect();
    let b = ser(&even);
    let c = 1 + 8 + 18 + 4 + 1 + 4 + 1; // start of the container
    assert_eq!(&b[c..c + 5], &[1, 0x88, 0x13, 0, 0]); // bitmap, cardinality 5000
    assert_eq!(&b[c + 5..c + 13], &[0x55; 8]);
    assert_eq!(b.len(), c + 5 + 8192 + 16);
    assert_eq!(values(&b), even);
    // union of two arrays past 4096 values gives a bitmap
    let odd: Vec<u64> = (0..3000).map(|x| 2 * x + 1).collect();
    let u = union(&ser(&even[..3000]), &ser(&odd));
    assert_eq!(u[c], 0); // 0..5999 is one run after runOptimize
    assert_eq!(values(&u), (0..6000).collect::<Vec<_>>());
}

#[test]
fn high_values_and_wide_keys() {
    let vals = [
        0u64,
        u64::MAX,
        1 << 63,
        (1 << 40) + 7,
        0x1234_5678_9abc_def0,
    ];
    let b = ser(&vals);
    let mut sorted = vals.to_vec();
    sorted.sort_unstable();
    assert_eq!(values(&b), sorted);
    assert_eq!(union(&b, &[0]), b);
}

#[test]
fn accumulator_layout_is_kept_as_java_left_it() {
    // An accumulator whose key 1 was removed in Java: its slot stays null, the cursor stays
    // at slot 2. A new key goes to slot 3 (addContainer bumps the cursor, no first-free search).
    let slots = |n: usize| {
        let mut v = [le4(1), vec![0xFE], le4(4)].concat();
        for i in 0..4 {
            if i == 1 || i >= n {
                v.push(0);
            } else {
                v.extend([vec![1], array(&[0])].concat());
            }
        }
        v
    };
    let node4 = |keys: &[u8]| {
        let mut k = [0u8; 4];
        k[..keys.len()].copy_from_slice(keys);
        k.reverse();
        [vec![0, keys.len() as u8, 0, 5, 0, 0, 0, 0, 0], k.to_vec()].concat()
    };
    let acc = [
        vec![1],
        le8(2),
        node4(&[0, 2]),
        leaf_bytes([0; 6], 0),
        leaf_bytes([0, 0, 0, 0, 0, 2], 2),
        slots(3),
        le8(2),
        le4(0),
        le4(2),
    ]
    .concat();
    assert_eq!(values(&acc), vec![0, 2 << 16]);
    let want = [
        vec![1],
        le8(3),
        node4(&[0, 2, 5]),
        leaf_bytes([0; 6], 0),
        leaf_bytes([0, 0, 0, 0, 0, 2], 2),
        leaf_bytes([0, 0, 0, 0, 0, 5], 3),
        slots(4),
        le8(3),
        le4(0),
        le4(3),
    ]
    .concat();
    assert_eq!(union(&acc, &ser(&[5 << 16])), want);
}

#[test]
fn bad_bytes_are_errors_naming_the_field() {
    let good = ser(&[1, 1 << 20, 1 << 40]);
    for n in 0..good.len() {
        let e = rbm64_union("price", &good[..n], &good)
            .unwrap_err()
            .to_string();
        assert!(e.contains("rbm64") && e.contains("price"), "{e}");
    }
    let mut bad = good.clone();
    bad[0] = 7;
    assert!(rbm64_union("f", &good, &bad).is_err());
}

fn values_strategy() -> impl Strategy<Value = Vec<u64>> {
    // few high keys with shared prefixes, plus dense low halves and scattered values
    let clustered = (0u64..300, 0u64..3, any::<u16>())
        .prop_map(|(h, shift, lo)| ((h << (8 * shift)) << 16) | lo as u64);
    let dense = (0u64..3, 0u64..9000).prop_map(|(h, lo)| (h << 16) | lo);
    prop::collection::vec(prop_oneof![clustered, dense, any::<u64>()], 0..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn roundtrip_and_union_are_set_semantics(a in values_strategy(), b in values_strategy()) {
        let (sa, sb) = (ser(&a), ser(&b));
        let set_a: BTreeSet<u64> = a.iter().copied().collect();
        let set_b: BTreeSet<u64> = b.iter().copied().collect();
        prop_assert_eq!(values(&sa), set_a.iter().copied().collect::<Vec<_>>());
        prop_assert_eq!(Rbm64::deserialize(&sa).unwrap().serialize(), sa.clone());
        let u = union(&sa, &sb);
        let all: Vec<u64> = set_a.union(&set_b).copied().collect();
        prop_assert_eq!(values(&u), all.clone());
        // an empty side changes nothing; into an empty accumulator, keys go in ascending order
        prop_assert_eq!(union(&sa, &[0]), sa.clone());
        let asc: Vec<u64> = set_a.iter().copied().collect();
        prop_assert_eq!(union(&[0], &ser(&asc)), ser(&asc));
        // unions of unions read back
        prop_assert_eq!(values(&union(&u, &sa)), all);
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200), cut in 0usize..64) {
        let _ = rbm64_union("f", &bytes, &[0]);
        let mut good = ser(&[1, 2 << 16, 3 << 40]);
        let n = good.len();
        good[cut % n] ^= bytes.first().copied().unwrap_or(1);
        let _ = rbm64_union("f", &good, &good);
    }
}
