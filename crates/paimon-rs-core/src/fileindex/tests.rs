//! The file index against bytes Java Paimon 1.0 wrote: `java_bloom_13_types.hex` is the
//! `_EMBEDDED_FILE_INDEX` of the one data file of an append table with a bloom filter on each
//! of 13 columns (`items` 50, `s` at fpp 0.01), holding 20 rows and a row of nulls (written by
//! the compat driver; the values are `java_rows` below, tests/compat/test_file_index_java.py
//! writes the same table with both engines).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, Date32Array, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, Int8Array, RecordBatch, StringArray, Time32MillisecondArray,
    TimestampMicrosecondArray, TimestampMillisecondArray,
};

use super::*;
use crate::spec::datum::Datum;
use crate::spec::types::TypeKind;

/// A data file whose manifest entry embeds `index`.
fn embedded(index: &[u8]) -> FileIndexes<'_> {
    FileIndexes {
        file_name: "f.parquet",
        embedded: Some(index),
        extra_files: &[],
    }
}

const JAVA_HEX: &str = include_str!("java_bloom_13_types.hex");

fn java_bytes() -> Vec<u8> {
    let h: String = JAVA_HEX.split_whitespace().collect();
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
        .collect()
}

fn field(id: i32, name: &str, kind: TypeKind) -> DataField {
    DataField {
        id,
        name: name.into(),
        data_type: DataType::new(kind),
        description: None,
    }
}

fn java_fields() -> Vec<DataField> {
    use TypeKind::*;
    vec![
        field(0, "i", Int),
        field(1, "b", BigInt),
        field(2, "s", VarChar(crate::spec::types::MAX_LEN)),
        field(3, "t", TinyInt),
        field(4, "sm", SmallInt),
        field(5, "f", Float),
        field(6, "d", Double),
        field(7, "dt", Date),
        field(8, "tm", Time(0)),
        field(9, "ts3", Timestamp(3)),
        field(10, "ts6", Timestamp(6)),
        field(11, "by", VarBinary(crate::spec::types::MAX_LEN)),
        field(12, "lz", LocalZonedTimestamp(6)),
    ]
}

fn java_options() -> BTreeMap<String, String> {
    let names: Vec<String> = java_fields().into_iter().map(|f| f.name).collect();
    let mut o = BTreeMap::new();
    o.insert(
        "file-index.bloom-filter.columns".to_string(),
        names.join(","),
    );
    o.insert(
        "file-index.in-manifest-threshold".to_string(),
        "100 kb".to_string(),
    );
    for n in &names {
        o.insert(
            format!("file-index.bloom-filter.{n}.items"),
            "50".to_string(),
        );
    }
    o.insert(
        "file-index.bloom-filter.s.fpp".to_string(),
        "0.01".to_string(),
    );
    o
}

/// Row `k` of 0..20 as the compat driver wrote it (then one row of nulls).
fn java_rows() -> RecordBatch {
    let ks: Vec<i64> = (0..20).collect();
    fn opt<T>(v: Vec<T>) -> Vec<Option<T>> {
        v.into_iter().map(Some).chain([None]).collect()
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(opt(ks
            .iter()
            .map(|k| (k * 7 - 30) as i32)
            .collect()))),
        Arc::new(Int64Array::from(opt(ks
            .iter()
            .map(|k| k * 1000003 - 5)
            .collect()))),
        Arc::new(StringArray::from(opt(ks
            .iter()
            .map(|k| format!("v{k}"))
            .collect()))),
        Arc::new(Int8Array::from(opt(ks
            .iter()
            .map(|k| (k - 10) as i8)
            .collect()))),
        Arc::new(Int16Array::from(opt(ks
            .iter()
            .map(|k| (k * 300 - 3000) as i16)
            .collect()))),
        Arc::new(Float32Array::from(opt(ks
            .iter()
            .map(|k| *k as f32 * 1.5 - 7.0)
            .collect()))),
        Arc::new(Float64Array::from(opt(ks
            .iter()
            .map(|k| *k as f64 * -2.25)
            .collect()))),
        Arc::new(Date32Array::from(opt(ks
            .iter()
            .map(|k| (k * 400 - 2000) as i32)
            .collect()))),
        Arc::new(Time32MillisecondArray::from(opt(ks
            .iter()
            .map(|k| (k * 3_600_000 + 17) as i32)
            .collect()))),
        Arc::new(TimestampMillisecondArray::from(opt(ks
            .iter()
            .map(|k| k * 86_400_123 - 1_000_000_000)
            .collect()))),
        Arc::new(TimestampMicrosecondArray::from(opt(ks
            .iter()
            .map(|k| k * 86_400_123_456 - 1_000_000_000_000)
            .collect()))),
        Arc::new(BinaryArray::from_opt_vec(
            ks.iter()
                .map(|k| Some(vec![*k as u8, 255 - *k as u8, 7]))
                .chain([None])
                .collect::<Vec<_>>()
                .iter()
                .map(|v| v.as_deref())
                .collect(),
        )),
        Arc::new(
            TimestampMicrosecondArray::from(opt(ks
                .iter()
                .map(|k| k * 123_456_789 - 1_000_000_000)
                .collect()))
            .with_timezone("UTC"),
        ),
    ];
    let schema = arrow_schema::Schema::new(
        java_fields()
            .iter()
            .zip(&cols)
            .map(|(f, c)| arrow_schema::Field::new(&f.name, c.data_type().clone(), true))
            .collect::<Vec<_>>(),
    );
    RecordBatch::try_new(Arc::new(schema), cols).expect("batch")
}

fn build(batch: &RecordBatch) -> Result<Vec<u8>> {
    let spec = FileIndexSpec::new(&java_options(), &java_fields(), 0)?.expect("indexed");
    let mut b = FileIndexBuilder::new(&spec)?;
    b.update(&spec, batch)?;
    match b.finish(&spec)? {
        BuiltIndex::Embedded(b) => Ok(b),
        BuiltIndex::File(_) => panic!("under the 100 kb threshold"),
    }
}

#[test]
fn our_index_bytes_equal_javas() -> Result<()> {
    let ours = build(&java_rows())?;
    let java = java_bytes();
    assert_eq!(ours.len(), java.len());
    assert_eq!(ours, java, "the container Java wrote for the same rows");
    Ok(())
}

#[test]
fn javas_index_decodes_and_holds_every_value() -> Result<()> {
    let ix = read_container(&java_bytes(), "java")?;
    let names: Vec<&str> = ix.iter().map(|c| c.column.as_str()).collect();
    // Java's HashMap order, which our writer reproduces
    let fields = java_fields();
    let all: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, format::java_hash_order(&all));
    assert!(ix.iter().all(|c| c.index_type == BLOOM_FILTER));
    let java = java_bytes();
    let file = embedded(&java);
    let col = |n: &str| {
        fields
            .iter()
            .find(|f| f.name == n)
            .map(|f| (f.name.clone(), f.data_type.clone()))
    };
    let eq = |n: &str, d: Datum| Predicate::leaf(n, LeafOp::Equal, vec![Some(d)]).expect("leaf");
    let dir = Path::new("/nonexistent");
    // every written value is found
    for k in 0..20i64 {
        for p in [
            eq("i", Datum::Int((k * 7 - 30) as i32)),
            eq("i", Datum::BigInt(k * 7 - 30)),
            eq("b", Datum::BigInt(k * 1000003 - 5)),
            eq("s", Datum::String(format!("v{k}"))),
            eq("t", Datum::TinyInt((k - 10) as i8)),
            eq("sm", Datum::SmallInt((k * 300 - 3000) as i16)),
            eq("f", Datum::Float(k as f32 * 1.5 - 7.0)),
            eq("d", Datum::Double(k as f64 * -2.25)),
            eq("dt", Datum::Date((k * 400 - 2000) as i32)),
            eq("tm", Datum::Time((k * 3_600_000 + 17) as i32)),
            eq(
                "ts3",
                Datum::Timestamp {
                    millis: k * 86_400_123 - 1_000_000_000,
                    nanos: 0,
                },
            ),
            eq(
                "ts6",
                Datum::Timestamp {
                    millis: (k * 86_400_123_456 - 1_000_000_000_000).div_euclid(1000),
                    nanos: ((k * 86_400_123_456 - 1_000_000_000_000).rem_euclid(1000) * 1000)
                        as i32,
                },
            ),
            eq("by", Datum::Bytes(vec![k as u8, 255 - k as u8, 7])),
        ] {
            assert!(file.may_match(&p, dir, &col)?, "{p:?} is in the file");
        }
    }
    // most absent values are ruled out (fpp 0.1 at 50 items, 20 written)
    let skipped = (1000..1200)
        .filter(|v| {
            !file
                .may_match(&eq("s", Datum::String(format!("w{v}"))), dir, &col)
                .unwrap_or(true)
        })
        .count();
    assert!(
        skipped > 180,
        "only {skipped} of 200 absent strings ruled out"
    );
    // IN keeps the file when one value may be there; OR / AND combine as Java's
    let inp = |vals: Vec<i32>| {
        Predicate::leaf(
            "i",
            LeafOp::In,
            vals.into_iter().map(|v| Some(Datum::Int(v))).collect(),
        )
        .expect("leaf")
    };
    assert!(file.may_match(&inp(vec![100_000, -30]), dir, &col)?);
    let absent: Vec<i32> = (100_000..100_200)
        .filter(|v| {
            !file
                .may_match(&eq("i", Datum::Int(*v)), dir, &col)
                .unwrap_or(true)
        })
        .take(3)
        .collect();
    assert_eq!(absent.len(), 3);
    assert!(!file.may_match(&inp(absent.clone()), dir, &col)?);
    let and = Predicate::And(vec![
        inp(absent.clone()),
        eq("s", Datum::String("v1".into())),
    ]);
    assert!(!file.may_match(&and, dir, &col)?);
    let or = Predicate::Or(vec![
        inp(absent.clone()),
        eq("s", Datum::String("v1".into())),
    ]);
    assert!(file.may_match(&or, dir, &col)?);
    // a null literal, another operator, an unindexed column or a literal of another kind
    // keep the file
    let null_eq = Predicate::leaf("i", LeafOp::Equal, vec![None]).expect("leaf");
    assert!(file.may_match(&null_eq, dir, &col)?);
    let gt =
        Predicate::leaf("i", LeafOp::GreaterThan, vec![Some(Datum::Int(absent[0]))]).expect("leaf");
    assert!(file.may_match(&gt, dir, &col)?);
    assert!(file.may_match(&eq("zz", Datum::Int(absent[0])), dir, &col)?);
    assert!(file.may_match(&eq("i", Datum::String("x".into())), dir, &col)?);
    Ok(())
}

#[test]
fn zero_floats_of_either_sign_keep_the_file() -> Result<()> {
    let fields = vec![field(0, "d", TypeKind::Double)];
    let mut o = BTreeMap::new();
    o.insert("file-index.bloom-filter.columns".into(), "d".into());
    o.insert("file-index.bloom-filter.d.items".into(), "10".into());
    let spec = FileIndexSpec::new(&o, &fields, 0)?.expect("indexed");
    let mut b = FileIndexBuilder::new(&spec)?;
    let schema = arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "d",
        arrow_schema::DataType::Float64,
        true,
    )]);
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(Float64Array::from(vec![-0.0, f64::NAN]))],
    )
    .expect("batch");
    b.update(&spec, &batch)?;
    let BuiltIndex::Embedded(bytes) = b.finish(&spec)? else {
        panic!("small");
    };
    let file = embedded(&bytes);
    let col = |n: &str| (n == "d").then(|| ("d".to_string(), fields[0].data_type.clone()));
    let eq = |v: f64| Predicate::leaf("d", LeafOp::Equal, vec![Some(Datum::Double(v))]);
    assert!(file.may_match(&eq(0.0)?, Path::new("/x"), &col)?);
    assert!(file.may_match(&eq(f64::NAN)?, Path::new("/x"), &col)?);
    Ok(())
}

#[test]
fn options_refuse_what_is_not_written() {
    let parse = |kv: &[(&str, &str)]| {
        let m: BTreeMap<String, String> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        FileIndexOptions::parse(&m)
    };
    let o = parse(&[
        ("file-index.bloom-filter.columns", "a, b"),
        ("file-index.bloom-filter.b.fpp", "0.05"),
        ("file-index.bloom-filter.a.items", "100"),
        ("file-index.in-manifest-threshold", "1 kb"),
        ("file-index.read.enabled", "false"),
    ])
    .expect("options");
    assert_eq!(o.columns.len(), 2);
    assert_eq!((o.columns[0].items, o.columns[1].fpp), (100, 0.05));
    assert_eq!(o.in_manifest_threshold, 1024);
    assert!(!o.read_enabled);
    for (kv, words) in [
        (
            ("file-index.bitmap.a.version", "2"),
            "is not declared in 'file-index.bitmap.columns'",
        ),
        (("file-index.bsi.columns", "a"), "'bsi' file index"),
        (("file-index.range-bitmap.columns", "a"), "'range-bitmap'"),
        (
            ("file-index.bloom-filter.columns", "a,,b"),
            "should not have empty column",
        ),
        (("file-index.bloom-filter.columns", "m[k]"), "map key"),
        (("file-index.bloom-filter.x.fpp", "0.1"), "is not declared"),
        (("file-index.bloom-filter.columns", "a"), ""),
    ] {
        let r = parse(&[kv]);
        if words.is_empty() {
            assert!(r.is_ok());
        } else {
            let e = r.expect_err("refused").to_string();
            assert!(e.contains(words), "{e}");
            if kv.0.contains("range-bitmap") || kv.0.contains("bsi") {
                assert!(
                    e.contains("'bloom-filter'") && e.contains("'bitmap'"),
                    "{e}"
                );
            }
        }
    }
    let e = parse(&[
        ("file-index.bloom-filter.columns", "a"),
        ("file-index.bloom-filter.a.size", "3"),
    ])
    .expect_err("unknown option");
    assert!(e.to_string().contains("takes 'items' and 'fpp'"), "{e}");
    let o = parse(&[
        ("file-index.bitmap.columns", "a,b"),
        ("file-index.bitmap.a.version", "1"),
        ("file-index.bitmap.b.index-block-size", "1 kb"),
        ("file-index.bloom-filter.columns", "b"),
    ])
    .expect("bitmap options");
    assert_eq!(
        (
            o.bitmaps[0].version,
            o.bitmaps[1].version,
            o.bitmaps[1].block_size
        ),
        (1, 2, 1024)
    );
    for (kv, words) in [
        (("file-index.bitmap.a.version", "3"), "of version 1 or 2"),
        (
            ("file-index.bitmap.a.size", "3"),
            "takes 'version' and 'index-block-size'",
        ),
        (
            ("file-index.bitmap.a.index-block-size", "0 b"),
            "positive size",
        ),
    ] {
        let e = parse(&[("file-index.bitmap.columns", "a"), kv])
            .expect_err("refused")
            .to_string();
        assert!(e.contains(words), "{e}");
    }
    for t in [
        TypeKind::Decimal {
            precision: 10,
            scale: 2,
        },
        TypeKind::VarBinary(10),
    ] {
        let fields = vec![field(0, "a", t)];
        let m: BTreeMap<String, String> =
            [("file-index.bitmap.columns".to_string(), "a".to_string())].into();
        let e = check_options(&m, &fields).expect_err("refused").to_string();
        assert!(e.contains("a bitmap file index takes"), "{e}");
    }
    let fields = vec![field(0, "a", TypeKind::Boolean)];
    let m: BTreeMap<String, String> = [(
        "file-index.bloom-filter.columns".to_string(),
        "a".to_string(),
    )]
    .into();
    assert!(check_options(&m, &fields).is_err());
    let m: BTreeMap<String, String> = [(
        "file-index.bloom-filter.columns".to_string(),
        "zz".to_string(),
    )]
    .into();
    assert!(check_options(&m, &fields)
        .expect_err("missing")
        .to_string()
        .contains("zz does not exist"));
}

/// A column with both a bloom filter and a bitmap, another with a bitmap only: each leaf is
/// ruled out by whichever index can, the container holds both types, and `.index` files are
/// read for leaves only a bitmap answers.
#[test]
fn bitmap_and_bloom_indexes_skip_together() -> Result<()> {
    use arrow_array::{Int32Array, StringArray};
    let fields = vec![
        field(0, "i", TypeKind::Int),
        field(1, "s", TypeKind::VarChar(100)),
    ];
    let raw: BTreeMap<String, String> = [
        ("file-index.bloom-filter.columns", "s"),
        ("file-index.bloom-filter.s.items", "100"),
        ("file-index.bitmap.columns", "i,s"),
        ("file-index.in-manifest-threshold", "10 kb"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let spec = FileIndexSpec::new(&raw, &fields, 0)?.expect("indexed");
    let schema = arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("i", arrow_schema::DataType::Int32, true),
        arrow_schema::Field::new("s", arrow_schema::DataType::Utf8, true),
    ]);
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int32Array::from(vec![Some(1), Some(2), Some(2), Some(5)])),
            Arc::new(StringArray::from(vec![
                Some("a"),
                Some("b"),
                Some("b"),
                Some("b"),
            ])),
        ],
    )
    .expect("batch");
    let mut b = FileIndexBuilder::new(&spec)?;
    b.update(&spec, &batch)?;
    let BuiltIndex::Embedded(bytes) = b.finish(&spec)? else {
        panic!("under the threshold")
    };
    let mut types: Vec<(String, String)> = read_container(&bytes, "f")?
        .into_iter()
        .map(|c| (c.column, c.index_type))
        .collect();
    types.sort();
    assert_eq!(
        types,
        [("i", BITMAP), ("s", BITMAP), ("s", BLOOM_FILTER)]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let file = embedded(&bytes);
    let col = |n: &str| {
        fields
            .iter()
            .find(|f| f.name == n)
            .map(|f| (f.name.clone(), f.data_type.clone()))
    };
    let leaf =
        |n: &str, op: LeafOp, ls: Vec<Option<Datum>>| Predicate::leaf(n, op, ls).expect("leaf");
    let dir = Path::new("/nonexistent");
    let i = |v: i32| Some(Datum::Int(v));
    let s = |v: &str| Some(Datum::String(v.into()));
    for (p, want) in [
        (leaf("i", LeafOp::Equal, vec![i(2)]), true),
        (leaf("i", LeafOp::Equal, vec![i(3)]), false),
        (leaf("i", LeafOp::In, vec![i(3), i(4)]), false),
        (leaf("i", LeafOp::In, vec![i(3), i(5)]), true),
        (leaf("i", LeafOp::NotIn, vec![i(1), i(2), i(5)]), false),
        (leaf("i", LeafOp::NotEqual, vec![i(1)]), true),
        (leaf("i", LeafOp::IsNull, vec![]), false),
        (leaf("i", LeafOp::IsNotNull, vec![]), true),
        (leaf("s", LeafOp::Equal, vec![s("c")]), false),
        (leaf("s", LeafOp::NotIn, vec![s("a"), s("b")]), false),
        (leaf("i", LeafOp::GreaterThan, vec![i(100)]), true),
    ] {
        assert_eq!(file.may_match(&p, dir, &col)?, want, "{p:?}");
    }
    let configured = configured_columns(&raw);
    assert!(configured.answers("i", LeafOp::IsNull));
    assert!(configured.answers("s", LeafOp::Equal));
    assert!(!configured.answers("i", LeafOp::GreaterThan));
    Ok(())
}

#[test]
fn a_dense_scattered_selection_is_not_worth_it() {
    use roaring::RoaringBitmap;
    let every_other: RoaringBitmap = (0..1000u32).filter(|i| i % 2 == 1).collect();
    assert!(!super::worth_selecting(&every_other, 1000));
    let first_half: RoaringBitmap = (0..500u32).collect();
    assert!(super::worth_selecting(&first_half, 1000));
    let sparse: RoaringBitmap = (0..1000u32).filter(|i| i % 10 == 0).collect();
    assert!(super::worth_selecting(&sparse, 1000));
    assert!(super::worth_selecting(&RoaringBitmap::new(), 1000));
}
