//! Validating the string data of an input batch. An Arrow array imported through the C Data
//! Interface is taken as it is (arrow-rs skips validation on import), so a producer can hand us
//! invalid UTF-8 or offsets outside the values buffer; written to Parquet, such a value makes
//! every later read of the file fail. The write path therefore checks what Arrow cannot promise,
//! for string columns only (also inside lists, maps, structs and dictionaries), vectorised: the
//! used values range is validated as UTF-8 once, then every offset must be monotonic, within
//! that range and on a char boundary (the algorithm of arrow-rs' `validate_values`, as a tight
//! loop). Only when that fails is the column walked value by value to name the first bad row.

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowDictionaryKeyType, Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::types::{UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, GenericStringArray, OffsetSizeTrait};
use arrow_array::{DictionaryArray, StringViewArray};
use arrow_buffer::ArrowNativeType;
use arrow_schema::DataType;

/// The first malformed value of a column: its row, where inside a nested value it sits
/// (`""` at the top, else e.g. `[].name`), and what is wrong with it.
#[derive(Debug, PartialEq)]
pub struct Malformed {
    pub row: usize,
    pub path: String,
    pub what: String,
}

impl Malformed {
    fn new(row: usize, what: impl Into<String>) -> Self {
        Malformed {
            row,
            path: String::new(),
            what: what.into(),
        }
    }

    /// The same fault seen from the parent: `row` of the parent, `step` prepended to the path.
    fn up(mut self, row: usize, step: &str) -> Self {
        self.row = row;
        self.path.insert_str(0, step);
        self
    }
}

/// Does a column of this type hold string data (itself or nested)? Only those are checked.
pub fn has_strings(t: &DataType) -> bool {
    use DataType::*;
    match t {
        Utf8 | LargeUtf8 | Utf8View => true,
        List(f)
        | LargeList(f)
        | ListView(f)
        | LargeListView(f)
        | FixedSizeList(f, _)
        | Map(f, _) => has_strings(f.data_type()),
        Struct(fields) => fields.iter().any(|f| has_strings(f.data_type())),
        Dictionary(_, v) => has_strings(v),
        _ => false,
    }
}

/// Check the string data of `col` (a no-op for columns without strings).
pub fn check_strings(col: &dyn Array) -> Result<(), Malformed> {
    use DataType::*;
    if !has_strings(col.data_type()) {
        return Ok(());
    }
    match col.data_type() {
        Utf8 => check_utf8(col.as_string::<i32>()),
        LargeUtf8 => check_utf8(col.as_string::<i64>()),
        Utf8View => check_views(col.as_string_view()),
        List(_) => {
            let a = col.as_list::<i32>();
            check_list(a.value_offsets(), a.values().as_ref())
        }
        LargeList(_) => {
            let a = col.as_list::<i64>();
            check_list(a.value_offsets(), a.values().as_ref())
        }
        Map(_, _) => {
            let a = col.as_map();
            check_list(a.value_offsets(), a.entries())
        }
        ListView(_) => {
            let a = col.as_list_view::<i32>();
            check_list_view(a.value_offsets(), a.value_sizes(), a.values().as_ref())
        }
        LargeListView(_) => {
            let a = col.as_list_view::<i64>();
            check_list_view(a.value_offsets(), a.value_sizes(), a.values().as_ref())
        }
        FixedSizeList(_, n) => {
            // the values are sliced to this array's rows: value i belongs to row i / n
            let n = (*n).max(1) as usize;
            let a = col.as_fixed_size_list();
            check_strings(a.values().as_ref()).map_err(|m| {
                let row = m.row / n;
                m.up(row, "[]")
            })
        }
        Struct(fields) => {
            // the children are sliced to the struct's rows
            let a = col.as_struct();
            for (f, c) in fields.iter().zip(a.columns()) {
                check_strings(c.as_ref()).map_err(|m| {
                    let row = m.row;
                    m.up(row, &format!(".{}", f.name()))
                })?;
            }
            Ok(())
        }
        Dictionary(k, _) => match k.as_ref() {
            Int8 => check_dictionary(col.as_dictionary::<Int8Type>()),
            Int16 => check_dictionary(col.as_dictionary::<Int16Type>()),
            Int32 => check_dictionary(col.as_dictionary::<Int32Type>()),
            Int64 => check_dictionary(col.as_dictionary::<Int64Type>()),
            UInt8 => check_dictionary(col.as_dictionary::<UInt8Type>()),
            UInt16 => check_dictionary(col.as_dictionary::<UInt16Type>()),
            UInt32 => check_dictionary(col.as_dictionary::<UInt32Type>()),
            UInt64 => check_dictionary(col.as_dictionary::<UInt64Type>()),
            other => Err(Malformed::new(0, format!("dictionary key type {other}"))),
        },
        _ => Ok(()),
    }
}

fn check_utf8<O: OffsetSizeTrait>(a: &GenericStringArray<O>) -> Result<(), Malformed> {
    if utf8_fast(a.value_offsets(), a.values().as_slice()) {
        Ok(())
    } else {
        Err(locate_utf8(a.value_offsets(), a.values().as_slice()))
    }
}

/// The vectorised check: one validation of the used range, then a pass over the offsets. If the
/// range is ASCII (the common case, and a cheaper test than UTF-8), every byte is a char
/// boundary, so monotonic offsets between the first and the last are all that is left.
fn utf8_fast<O: OffsetSizeTrait>(offsets: &[O], values: &[u8]) -> bool {
    let (Some(&first_o), Some(&last_o)) = (offsets.first(), offsets.last()) else {
        return true; // an empty array may have no offsets at all
    };
    let (Some(first), Some(last)) = (first_o.to_usize(), last_o.to_usize()) else {
        return false;
    };
    let Some(bytes) = values.get(first..last) else {
        return false;
    };
    let mut ok = true;
    let mut prev = first_o;
    if bytes.is_ascii() {
        for &o in &offsets[1..] {
            // no early exit keeps the loop branch-free
            ok &= prev <= o;
            prev = o;
        }
        return ok;
    }
    let Ok(s) = std::str::from_utf8(bytes) else {
        return false;
    };
    for &o in &offsets[1..] {
        // `o <= last_o` keeps `is_char_boundary` in range
        ok &= prev <= o && o <= last_o && s.is_char_boundary(o.as_usize() - first);
        prev = o;
    }
    ok
}

/// The slow path: the first row whose offsets or bytes are bad.
fn locate_utf8<O: ArrowNativeType>(offsets: &[O], values: &[u8]) -> Malformed {
    for (row, w) in offsets.windows(2).enumerate() {
        let (Some(start), Some(end)) = (w[0].to_usize(), w[1].to_usize()) else {
            return Malformed::new(row, format!("negative offset ({:?} to {:?})", w[0], w[1]));
        };
        if start > end {
            return Malformed::new(row, format!("offsets decrease ({start} to {end})"));
        }
        let Some(bytes) = values.get(start..end) else {
            return Malformed::new(
                row,
                format!(
                    "offsets {start}..{end} beyond the values buffer ({} bytes)",
                    values.len()
                ),
            );
        };
        if let Err(e) = std::str::from_utf8(bytes) {
            return Malformed::new(row, format!("invalid UTF-8 ({e})"));
        }
    }
    Malformed::new(0, "offsets do not fit the values buffer")
}

/// Utf8View: every view's bytes, inline or in a data buffer, must exist and be valid UTF-8.
/// Inline ASCII strings (the common case) are recognised with one mask test.
fn check_views(a: &StringViewArray) -> Result<(), Malformed> {
    const HIGH_BITS: u128 = 0x8080_8080_8080_8080_8080_8080 << 32;
    let buffers = a.data_buffers();
    // a data buffer that is ASCII throughout holds valid strings wherever a view points
    let ascii: Vec<bool> = buffers.iter().map(|b| b.as_slice().is_ascii()).collect();
    for (row, v) in a.views().iter().enumerate() {
        let len = *v as u32 as usize;
        let inline = v.to_le_bytes();
        let data: &[u8] = if len <= 12 {
            if v & HIGH_BITS == 0 {
                continue; // inline ASCII (the padding past `len` is zero or ASCII too)
            }
            &inline[4..4 + len]
        } else {
            let buffer = (*v >> 64) as u32 as usize;
            let offset = (*v >> 96) as u32 as usize;
            match buffers
                .get(buffer)
                .and_then(|b| b.as_slice().get(offset..offset + len))
            {
                Some(_) if ascii[buffer] => continue,
                Some(d) => d,
                None => {
                    return Err(Malformed::new(
                        row,
                        format!("view of {len} bytes at {offset} beyond data buffer {buffer}"),
                    ))
                }
            }
        };
        if let Err(e) = std::str::from_utf8(data) {
            return Err(Malformed::new(row, format!("invalid UTF-8 ({e})")));
        }
    }
    Ok(())
}

/// Lists and maps: the offsets must be monotonic and within the child; the used child range is
/// checked, and a fault in it is reported at the row whose list holds it.
fn check_list<O: OffsetSizeTrait>(offsets: &[O], child: &dyn Array) -> Result<(), Malformed> {
    let mut prev = offsets.first().map_or(0, |o| o.as_usize());
    if prev > child.len() {
        return Err(Malformed::new(
            0,
            format!("list offset {prev} beyond the {} child values", child.len()),
        ));
    }
    for (row, o) in offsets.iter().skip(1).enumerate() {
        let o = o.to_usize().unwrap_or(usize::MAX);
        if o < prev || o > child.len() {
            return Err(Malformed::new(
                row,
                format!(
                    "list offsets {prev}..{o} outside the {} child values",
                    child.len()
                ),
            ));
        }
        prev = o;
    }
    let (first, last) = match (offsets.first(), offsets.last()) {
        (Some(f), Some(l)) => (f.as_usize(), l.as_usize()),
        _ => return Ok(()),
    };
    check_strings(child.slice(first, last - first).as_ref()).map_err(|m| {
        let at = first + m.row;
        // the row whose range [o_i, o_i+1) holds child value `at`
        let row = offsets
            .partition_point(|o| o.as_usize() <= at)
            .saturating_sub(1);
        m.up(row, "[]")
    })
}

fn check_list_view<O: OffsetSizeTrait>(
    offsets: &[O],
    sizes: &[O],
    child: &dyn Array,
) -> Result<(), Malformed> {
    let range = |i: usize| -> Option<(usize, usize)> {
        let (o, s) = (offsets[i].to_usize()?, sizes[i].to_usize()?);
        Some((o, o.checked_add(s)?))
    };
    for row in 0..offsets.len().min(sizes.len()) {
        match range(row) {
            Some((_, end)) if end <= child.len() => {}
            _ => {
                return Err(Malformed::new(
                    row,
                    "list view outside its child values".to_string(),
                ))
            }
        }
    }
    check_strings(child).map_err(|m| {
        let at = m.row;
        let row = (0..offsets.len())
            .find(|&i| range(i).is_some_and(|(s, e)| s <= at && at < e))
            .unwrap_or(0);
        m.up(row, "[]")
    })
}

fn check_dictionary<K: ArrowDictionaryKeyType>(a: &DictionaryArray<K>) -> Result<(), Malformed> {
    let n = a.values().len();
    let keys = a.keys();
    for (row, k) in keys.values().iter().enumerate() {
        if keys.is_valid(row) && k.to_usize().is_none_or(|k| k >= n) {
            return Err(Malformed::new(
                row,
                format!("dictionary key {k:?} beyond the {n} dictionary values"),
            ));
        }
    }
    check_strings(a.values().as_ref()).map_err(|m| {
        let entry = m.row;
        let row = keys
            .values()
            .iter()
            .enumerate()
            .position(|(r, k)| keys.is_valid(r) && k.to_usize() == Some(entry));
        let what = format!("{} (dictionary entry {entry})", m.what);
        Malformed {
            row: row.unwrap_or(0),
            what,
            ..m
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::{ArrayRef, Int32Array, ListArray, StringArray, StructArray};
    use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
    use arrow_data::ArrayData;
    use arrow_schema::Field;

    use super::*;

    /// A Utf8 array built without validation, as the C Data Interface import does.
    fn raw_utf8(offsets: &[i32], values: &[u8]) -> ArrayRef {
        let data = ArrayData::builder(DataType::Utf8)
            .len(offsets.len() - 1)
            .add_buffer(Buffer::from_slice_ref(offsets))
            .add_buffer(Buffer::from_slice_ref(values));
        // SAFETY: test only; the array is deliberately malformed but its buffers are as long as
        // `len` needs, and it is only read through the checks under test (bounds-checked).
        let data = unsafe { data.build_unchecked() };
        Arc::new(StringArray::from(data))
    }

    #[test]
    fn valid_strings_pass() {
        let a = StringArray::from(vec![Some("a"), None, Some("héllo"), Some("")]);
        assert_eq!(check_strings(&a), Ok(()));
        assert_eq!(check_strings(&a.slice(1, 2)), Ok(()));
        assert_eq!(
            check_strings(&StringArray::from(Vec::<&str>::new())),
            Ok(())
        );
    }

    #[test]
    fn invalid_utf8_names_the_row() {
        let a = raw_utf8(&[0, 1, 2, 4], b"ab\xff\xfe");
        let m = check_strings(a.as_ref()).unwrap_err();
        assert_eq!((m.row, m.path.as_str()), (2, ""));
        assert!(m.what.contains("invalid UTF-8"), "{}", m.what);
        // a slice starting at the bad row: rows count from the slice
        assert_eq!(check_strings(a.slice(2, 1).as_ref()).unwrap_err().row, 0);
        assert_eq!(check_strings(a.slice(0, 2).as_ref()), Ok(()));
    }

    #[test]
    fn offset_inside_a_char_is_refused() {
        // "é" is two bytes; row 0 ends in its middle, both rows alone are invalid
        let a = raw_utf8(&[0, 2, 3], "aé".as_bytes());
        assert_eq!(check_strings(a.as_ref()).unwrap_err().row, 0);
    }

    #[test]
    fn bad_offsets_are_refused() {
        let beyond = raw_utf8(&[0, 1, 9], b"abc");
        let m = check_strings(beyond.as_ref()).unwrap_err();
        assert_eq!(m.row, 1);
        assert!(m.what.contains("beyond the values buffer"), "{}", m.what);
        let decreasing = raw_utf8(&[0, 2, 1, 3], b"abc");
        let m = check_strings(decreasing.as_ref()).unwrap_err();
        assert_eq!(m.row, 1);
        assert!(m.what.contains("decrease"), "{}", m.what);
        let negative = raw_utf8(&[0, -1], b"abc");
        assert_eq!(check_strings(negative.as_ref()).unwrap_err().row, 0);
    }

    #[test]
    fn string_view_is_checked() {
        let ok = StringViewArray::from(vec!["short", "a string longer than twelve bytes", "é"]);
        assert_eq!(check_strings(&ok), Ok(()));
        // an inline view of 2 bytes 0xff 0xfe in row 1
        let bad_inline: u128 = 2 | (0xfeff_u128 << 32);
        let views = ScalarBuffer::from(vec![ok.views()[0], bad_inline]);
        // SAFETY: test only; the view is deliberately invalid UTF-8, read only by the check.
        let a = unsafe { StringViewArray::new_unchecked(views, Vec::new().into(), None) };
        let m = check_strings(&a).unwrap_err();
        assert_eq!(m.row, 1);
        // a long view pointing past its buffer
        let long = ok.views()[1];
        let past = long + (1000_u128 << 96);
        let views = ScalarBuffer::from(vec![past]);
        // SAFETY: as above; the check reads the buffers with bounds checks only.
        let a = unsafe {
            StringViewArray::new_unchecked(views, ok.data_buffers().to_vec().into(), None)
        };
        assert!(check_strings(&a)
            .unwrap_err()
            .what
            .contains("beyond data buffer"));
    }

    #[test]
    fn nested_strings_name_row_and_path() {
        let bad = raw_utf8(&[0, 1, 2, 3, 4], b"abc\xff");
        // list rows: [a, b], [], [c, \xff]
        let field = Arc::new(Field::new("item", DataType::Utf8, true));
        let list = ListArray::new(
            field.clone(),
            OffsetBuffer::new(ScalarBuffer::from(vec![0, 2, 2, 4])),
            bad.clone(),
            None,
        );
        let m = check_strings(&list).unwrap_err();
        assert_eq!((m.row, m.path.as_str()), (2, "[]"));
        assert_eq!(check_strings(&list.slice(0, 2)), Ok(()));
        // struct {n: int, s: list<string>} of 3 rows
        let s = StructArray::from(vec![
            (
                Arc::new(Field::new("n", DataType::Int32, true)),
                Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("s", list.data_type().clone(), true)),
                Arc::new(list) as ArrayRef,
            ),
        ]);
        let m = check_strings(&s).unwrap_err();
        assert_eq!((m.row, m.path.as_str()), (2, ".s[]"));
        // list offsets beyond the child
        let data = ArrayData::builder(DataType::List(field))
            .len(2)
            .add_buffer(Buffer::from_slice_ref([0, 2, 9]))
            .child_data(vec![bad.to_data()]);
        // SAFETY: test only; the offsets are deliberately out of range and are read only by the
        // bounds-checked check under test.
        let over = ListArray::from(unsafe { data.build_unchecked() });
        let m = check_strings(&over).unwrap_err();
        assert_eq!(m.row, 1);
        assert!(m.what.contains("outside"), "{}", m.what);
        let mut b = ListBuilder::new(StringBuilder::new());
        b.append_value([Some("x"), None]);
        b.append_null();
        assert_eq!(check_strings(&b.finish()), Ok(()));
    }

    #[test]
    fn dictionary_values_are_checked() {
        let values = raw_utf8(&[0, 1, 2], b"a\xff");
        let keys = arrow_array::Int32Array::from(vec![0, 0, 1]);
        let d = DictionaryArray::<Int32Type>::try_new(keys, values).unwrap();
        let m = check_strings(&d).unwrap_err();
        assert_eq!(m.row, 2);
        assert!(m.what.contains("dictionary entry 1"), "{}", m.what);
    }
}

/// The cost of the check on the bulk benchmark's string columns (2M rows of ~16 and ~64
/// ASCII characters), next to arrow-rs' own `validate_values`. Prints, asserts nothing:
/// `cargo test --release -p paimon-rs-core strings_cost -- --ignored --nocapture`.
#[cfg(test)]
mod cost {
    use std::time::Instant;

    use arrow_array::{Array, StringArray, StringViewArray};

    use super::check_strings;

    fn column(rows: usize, width: usize) -> StringArray {
        (0..rows).map(|i| Some(format!("{i:0width$}"))).collect()
    }

    /// Best of 5, wall ms.
    fn best_of<F: FnMut()>(mut f: F) -> f64 {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::MAX, f64::min)
    }

    #[test]
    #[ignore]
    fn strings_cost() {
        for width in [16, 64] {
            let a = column(2_000_000, width);
            let ours = best_of(|| check_strings(&a).unwrap());
            let data = a.to_data();
            let arrow = best_of(|| data.validate_values().unwrap());
            let v = StringViewArray::from_iter(a.iter());
            let view = best_of(|| check_strings(&v).unwrap());
            println!(
                "2M x {width} chars (best of 5, wall ms): check_strings {ours:.1}, arrow \
                 validate_values {arrow:.1}, as Utf8View {view:.1}"
            );
        }
    }
}
