//! `variant_get` of nested Arrow types (struct, list, large list, fixed-size list, map with
//! string keys; their children of any type `variant_get` reads, nested ones included): the
//! Rust kernel of the Python reference `_read_exact` (python/paimon_rs/variant_path.py), with
//! the same checks, order and messages. An object reads as a struct (its fields matched by
//! name, a missing one null) or as a map (its fields in stored order); an array as a list;
//! a VARIANT null, a missing path or a SQL null row as an Arrow null.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, LargeListArray, LargeStringArray, ListArray, MapArray,
    StringArray, StructArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef, Fields, TimeUnit};

use super::{
    array_child, finish, object, object_child, out_for, push_null, read, Bin, Frames, Kind, Out,
    Res, Row, Scratch, Seg, VariantFail, ARRAY, NULL, OBJECT, PRIMITIVE,
};

/// The list flavours `variant_get` reads an array as.
enum ListKind {
    List,
    Large,
    Fixed(usize),
}

/// One node of a requested type and its output column: `at` its preorder number (the `.1` of
/// [`VariantFail::MismatchAt`]), `valid` and (lists, maps) `offsets` per entry.
struct Col<'a> {
    at: usize,
    valid: Vec<bool>,
    offsets: Vec<usize>,
    shape: Shape<'a>,
}

enum Shape<'a> {
    Leaf(Kind, Out<'a>),
    Struct(Fields, Vec<Col<'a>>),
    List(FieldRef, ListKind, Box<Col<'a>>),
    /// The entries field, whether sorted, whether the keys are large strings, the keys, the
    /// items.
    Map(FieldRef, bool, bool, Vec<&'a [u8]>, Box<Col<'a>>),
}

/// The scalar kinds the kernel reads, by Arrow type (None: not a scalar it reads).
fn leaf_kind(t: &DataType) -> Option<Kind> {
    Some(match t {
        DataType::Boolean => Kind::Bool,
        DataType::Int8 => Kind::Int8,
        DataType::Int16 => Kind::Int16,
        DataType::Int32 => Kind::Int32,
        DataType::Int64 => Kind::Int64,
        DataType::Float32 => Kind::Float32,
        DataType::Float64 => Kind::Float64,
        DataType::Utf8 => Kind::Utf8,
        DataType::LargeUtf8 => Kind::LargeUtf8,
        DataType::Binary => Kind::Binary,
        DataType::LargeBinary => Kind::LargeBinary,
        DataType::Date32 => Kind::Date32,
        DataType::Timestamp(TimeUnit::Microsecond, tz) => Kind::TimestampMicros(tz.clone()),
        DataType::Decimal128(p, s) if *s >= 0 => Kind::Decimal128(*p, *s),
        _ => return None,
    })
}

impl<'a> Col<'a> {
    /// The empty column of type `t`, its nodes numbered from `*next` in preorder. Unsupported:
    /// a type the reference reads differently (a struct with repeated field names: its dict
    /// keeps one) or one `variant_get` refuses before reading.
    fn plan(t: &DataType, next: &mut usize, n: usize) -> Res<Self> {
        let at = *next;
        *next += 1;
        let shape = if let Some(kind) = leaf_kind(t) {
            let out = out_for(&kind, n);
            Shape::Leaf(kind, out)
        } else {
            match t {
                DataType::Struct(fields) => {
                    let mut names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
                    names.sort_unstable();
                    if names.windows(2).any(|p| p[0] == p[1]) {
                        return Err(VariantFail::Unsupported);
                    }
                    let kids = fields
                        .iter()
                        .map(|f| Col::plan(f.data_type(), next, n))
                        .collect::<Res<_>>()?;
                    Shape::Struct(fields.clone(), kids)
                }
                DataType::List(f) => {
                    Shape::List(f.clone(), ListKind::List, Col::boxed(f, next, n)?)
                }
                DataType::LargeList(f) => {
                    Shape::List(f.clone(), ListKind::Large, Col::boxed(f, next, n)?)
                }
                DataType::FixedSizeList(f, size) => {
                    let size = usize::try_from(*size).map_err(unsupported)?;
                    Shape::List(f.clone(), ListKind::Fixed(size), Col::boxed(f, next, n)?)
                }
                DataType::Map(entries, sorted) => {
                    let DataType::Struct(kv) = entries.data_type() else {
                        return Err(VariantFail::Unsupported);
                    };
                    let (Some(key), Some(item), 2) = (kv.first(), kv.get(1), kv.len()) else {
                        return Err(VariantFail::Unsupported);
                    };
                    let large_keys = match key.data_type() {
                        DataType::Utf8 => false,
                        DataType::LargeUtf8 => true,
                        _ => return Err(VariantFail::Unsupported),
                    };
                    let kid = Col::boxed(item, next, n)?;
                    Shape::Map(entries.clone(), *sorted, large_keys, Vec::new(), kid)
                }
                _ => return Err(VariantFail::Unsupported),
            }
        };
        let nested = matches!(shape, Shape::List(..) | Shape::Map(..));
        Ok(Col {
            at,
            valid: Vec::with_capacity(n),
            offsets: if nested { vec![0] } else { Vec::new() },
            shape,
        })
    }

    fn boxed(f: &FieldRef, next: &mut usize, n: usize) -> Res<Box<Self>> {
        Ok(Box::new(Col::plan(f.data_type(), next, n)?))
    }

    /// Ends a list or map entry of `n` items (a null one: 0 items, not valid).
    fn close(&mut self, n: usize, is_valid: bool) {
        let last = self.offsets.last().copied().unwrap_or(0);
        self.offsets.push(last + n);
        self.valid.push(is_valid);
    }

    /// An Arrow null (a struct's children and a fixed-size list's items get nulls beneath it,
    /// as pyarrow builds them).
    fn push_null(&mut self) {
        match &mut self.shape {
            Shape::Leaf(_, out) => push_null(out),
            Shape::Struct(_, kids) => {
                kids.iter_mut().for_each(Col::push_null);
                self.valid.push(false);
            }
            Shape::List(_, list, kid) => {
                if let ListKind::Fixed(size) = list {
                    (0..*size).for_each(|_| kid.push_null());
                }
                self.close(0, false);
            }
            Shape::Map(..) => self.close(0, false),
        }
    }

    /// Reads the checked value at [p, e) of the row into this column; `MismatchAt`'s node
    /// number (as `Mismatch`) where its stored type is not the node's.
    fn push(&mut self, row: &mut Row<'a, '_>, p: usize, e: usize) -> Res<()> {
        let v = row.value;
        let head = v[p];
        let (basic, info) = (head & 3, head >> 2);
        let mismatch = Err(VariantFail::Mismatch(self.at));
        if let Shape::Leaf(kind, out) = &mut self.shape {
            return read(v, p, kind, self.at, out);
        }
        if basic == PRIMITIVE && info == NULL {
            self.push_null();
            return Ok(());
        }
        let n = match &mut self.shape {
            Shape::Leaf(..) => return Ok(()),
            Shape::Struct(fields, kids) => {
                if basic != OBJECT {
                    return mismatch;
                }
                // an empty object never reads the dictionary (the reference does not either)
                let empty = object_len(v, p) == 0;
                for (f, kid) in fields.iter().zip(kids.iter_mut()) {
                    let id = if empty {
                        None
                    } else {
                        row.keys()?.ids.get(f.name().as_bytes()).copied()
                    };
                    match id.and_then(|id| object_child(v, p, id)) {
                        Some((a, b)) => kid.push(row, a, b)?,
                        None => kid.push_null(),
                    }
                }
                self.valid.push(true);
                return Ok(());
            }
            Shape::List(_, list, kid) => {
                if basic != ARRAY {
                    return mismatch;
                }
                let n = array_len(v, p);
                if matches!(list, ListKind::Fixed(size) if *size != n) {
                    return mismatch;
                }
                for i in 0..n {
                    let (a, b) = array_child(v, p, i).ok_or(VariantFail::Unsupported)?;
                    kid.push(row, a, b)?;
                }
                n
            }
            Shape::Map(_, _, _, keys, kid) => {
                if basic != OBJECT {
                    return mismatch;
                }
                let (ids, children) = object(v, p, e)?;
                if !ids.is_empty() {
                    let dict = row.keys()?;
                    for id in &ids {
                        keys.push(*dict.keys.get(*id).ok_or(VariantFail::Unsupported)?);
                    }
                }
                for (a, b) in children {
                    kid.push(row, a, b)?;
                }
                ids.len()
            }
        };
        self.close(n, true);
        Ok(())
    }

    /// The Arrow array of the column (of the type it was planned from). Unsupported: what
    /// Arrow refuses (a null in a non-nullable child, offsets past i32).
    fn finish(self) -> Res<ArrayRef> {
        let len = self.valid.len();
        let nulls = nulls(self.valid);
        let offsets = self.offsets;
        Ok(match self.shape {
            Shape::Leaf(kind, out) => finish(&kind, out)?,
            Shape::Struct(fields, kids) => {
                let kids = kids.into_iter().map(Col::finish).collect::<Res<_>>()?;
                Arc::new(
                    StructArray::try_new_with_length(fields, kids, nulls, len)
                        .map_err(unsupported)?,
                )
            }
            Shape::List(field, list, kid) => {
                let values = kid.finish()?;
                match list {
                    ListKind::List => Arc::new(
                        ListArray::try_new(field, offsets_of(&offsets)?, values, nulls)
                            .map_err(unsupported)?,
                    ),
                    ListKind::Large => Arc::new(
                        LargeListArray::try_new(field, offsets_of(&offsets)?, values, nulls)
                            .map_err(unsupported)?,
                    ),
                    ListKind::Fixed(size) => Arc::new(
                        FixedSizeListArray::try_new_with_length(
                            field,
                            i32::try_from(size).map_err(unsupported)?,
                            values,
                            nulls,
                            len,
                        )
                        .map_err(unsupported)?,
                    ),
                }
            }
            Shape::Map(field, sorted, large_keys, keys, kid) => {
                let DataType::Struct(kv) = field.data_type() else {
                    return Err(VariantFail::Unsupported);
                };
                let keys = keys
                    .into_iter()
                    .map(std::str::from_utf8)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(unsupported)?;
                let keys: ArrayRef = if large_keys {
                    Arc::new(LargeStringArray::from(keys))
                } else {
                    Arc::new(StringArray::from(keys))
                };
                let entries = StructArray::try_new(kv.clone(), vec![keys, kid.finish()?], None)
                    .map_err(unsupported)?;
                Arc::new(
                    MapArray::try_new(field, offsets_of(&offsets)?, entries, nulls, sorted)
                        .map_err(unsupported)?,
                )
            }
        })
    }
}

/// What Arrow refuses to build: left to the reference.
fn unsupported<E>(_: E) -> VariantFail {
    VariantFail::Unsupported
}

/// The field count of the checked object at `pos`.
fn object_len(v: &[u8], pos: usize) -> usize {
    let size_w = if (v[pos] >> 6) & 1 == 1 { 4 } else { 1 };
    super::uint(v, pos + 1, size_w)
}

/// The element count of the checked array at `pos`.
fn array_len(v: &[u8], pos: usize) -> usize {
    let size_w = if (v[pos] >> 4) & 1 == 1 { 4 } else { 1 };
    super::uint(v, pos + 1, size_w)
}

fn nulls(valid: Vec<bool>) -> Option<NullBuffer> {
    if valid.iter().all(|&x| x) {
        None
    } else {
        Some(NullBuffer::from(valid))
    }
}

fn offsets_of<O: arrow_array::OffsetSizeTrait>(offsets: &[usize]) -> Res<OffsetBuffer<O>> {
    let o = offsets
        .iter()
        .map(|&x| O::from_usize(x).ok_or(VariantFail::Unsupported))
        .collect::<Res<Vec<O>>>()?;
    Ok(OffsetBuffer::new(ScalarBuffer::from(o)))
}

/// `variant_get` of one chunk (a `struct<value: binary, metadata: binary>` array) for any
/// types it reads, nested ones included: one Arrow array of each path's type. Each row is
/// checked whole first, then its paths are read in order, each value depth first, as the
/// reference does; a mismatch is `MismatchAt(path, node)`.
pub fn variant_get_nested(
    chunk: &StructArray,
    paths: &[(Vec<Seg>, DataType)],
) -> Res<Vec<ArrayRef>> {
    if chunk.num_columns() != 2 {
        return Err(VariantFail::Unsupported);
    }
    let values = Bin::of(chunk.column(0))?;
    let metas = Bin::of(chunk.column(1))?;
    let n = chunk.len();
    let mut cols = paths
        .iter()
        .map(|(_, t)| Col::plan(t, &mut 0, n))
        .collect::<Res<Vec<_>>>()?;
    let mut cache = None;
    let mut frames = Frames::new();
    let mut scratch = Scratch::default();
    for r in 0..n {
        if chunk.is_null(r) {
            cols.iter_mut().for_each(Col::push_null);
            continue;
        }
        let mut row = Row::checked(&values, &metas, r, &mut cache, &mut scratch)?;
        for (at, ((path, _), col)) in paths.iter().zip(cols.iter_mut()).enumerate() {
            let got = match row.walk(path, &mut frames)? {
                Some((p, e)) => col.push(&mut row, p, e),
                None => {
                    col.push_null();
                    Ok(())
                }
            };
            got.map_err(|fail| match fail {
                VariantFail::Mismatch(node) => VariantFail::MismatchAt(at, node),
                other => other,
            })?;
        }
    }
    cols.into_iter().map(Col::finish).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::BinaryArray;
    use arrow_schema::Field;

    /// A one-row-per-value column over `metadata` (keys "a", "b").
    fn column(rows: &[Option<&[u8]>]) -> StructArray {
        let meta: &[u8] = &[0x01, 2, 0, 1, 2, b'a', b'b'];
        let values: ArrayRef = Arc::new(BinaryArray::from(
            rows.iter()
                .map(|r| Some(r.unwrap_or(&[0])))
                .collect::<Vec<_>>(),
        ));
        let metas: ArrayRef = Arc::new(BinaryArray::from(vec![Some(meta); rows.len()]));
        let valid = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
        StructArray::try_new(
            Fields::from(vec![
                Field::new("value", DataType::Binary, true),
                Field::new("metadata", DataType::Binary, true),
            ]),
            vec![values, metas],
            Some(valid),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    // {"a": 1, "b": [true, null]}: object, 2 fields (ids 0, 1), 1-byte ids and offsets
    const OBJ: &[u8] = &[
        0x02, 2, 0, 1, 0, 2, 9, 0x0C, 1, 0x03, 2, 0, 1, 2, 0x04, 0x00,
    ];
    // [7, 8]
    const ARR: &[u8] = &[0x03, 2, 0, 2, 4, 0x0C, 7, 0x0C, 8];

    #[test]
    fn struct_list_and_map_read_like_the_reference() {
        let col = column(&[Some(OBJ), None, Some(&[0x00])]);
        let st = DataType::Struct(Fields::from(vec![
            Field::new("b", DataType::new_list(DataType::Boolean, true), true),
            Field::new("a", DataType::Int64, true),
            Field::new("zz", DataType::Int8, true),
        ]));
        let map = DataType::Map(
            Arc::new(Field::new(
                "entries",
                DataType::Struct(Fields::from(vec![
                    Field::new("key", DataType::Utf8, false),
                    Field::new("value", DataType::Int64, true),
                ])),
                false,
            )),
            false,
        );
        let got =
            variant_get_nested(&col, &[(vec![], st.clone())]).unwrap_or_else(|e| panic!("{e:?}"));
        let s = got[0].as_struct();
        assert_eq!(got[0].data_type(), &st);
        assert_eq!(s.null_count(), 2); // the SQL null row and the VARIANT null
        let b = s.column(0).as_list::<i32>();
        assert_eq!(b.value_length(0), 2);
        assert_eq!(
            s.column(1)
                .as_primitive::<arrow_array::types::Int64Type>()
                .value(0),
            1
        );
        assert!(s.column(2).is_null(0));
        // "b" is an array, not an int64: node 1 of the map type (0 the map, 1 its int64)
        assert_eq!(
            variant_get_nested(&col, &[(vec![], map)]).err(),
            Some(VariantFail::MismatchAt(0, 1))
        );
        let fixed = DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Int8, true)), 3);
        let arr = column(&[Some(ARR)]);
        assert_eq!(
            variant_get_nested(&arr, &[(vec![], fixed)]).err(),
            Some(VariantFail::MismatchAt(0, 0))
        );
        let list = DataType::new_large_list(DataType::Int8, true);
        let got = variant_get_nested(&arr, &[(vec![], list)]).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(got[0].as_list::<i64>().value(0).len(), 2);
    }
}
