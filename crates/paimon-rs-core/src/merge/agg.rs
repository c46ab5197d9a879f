//! Field aggregators of the `aggregation` engine and of aggregated partial-update fields
//! (paimon-behaviour.md §8.4). Values are merged one key at a time, so accumulators are
//! [`Cell`]s: a reference to an input cell (no copy; nested types stay Arrow) or a computed
//! [`Datum`].

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::ArrayRef;

use crate::error::{Error, Result};
use crate::spec::datum::Datum;
use crate::spec::types::{DataType, TypeKind};

mod nested;
mod rbm64;
mod sketch;

pub use nested::{NestedSpec, NullKeyStrategy};

/// One accumulated value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    /// Row `row` of the value column in source batch `src`.
    Pick(u32, u32),
    Val(Datum),
    /// A computed nested value: the elements of an ARRAY (its values) or of a MAP (its entries,
    /// a struct of key and value).
    Arr(ArrayRef),
}

/// The aggregate functions this engine implements (Java's factories, `count` is not one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AggFunc {
    Sum,
    Product,
    Max,
    Min,
    LastValue,
    LastNonNullValue,
    FirstValue,
    FirstNonNullValue,
    ListAgg,
    BoolAnd,
    BoolOr,
    /// Union of serialized 32-bit Roaring bitmaps (portable format).
    Rbm32,
    /// Union of serialized Java `Roaring64Bitmap`s (RoaringBitmap 1.2.1's ART layout).
    Rbm64,
    /// Union of serialized DataSketches theta sketches.
    ThetaSketch,
    /// Union of serialized DataSketches HLL sketches (result HLL_4).
    HllSketch,
    /// ARRAY concatenation (`fields.<f>.distinct`: set semantics).
    Collect,
    /// MAP union, input wins.
    MergeMap,
    /// MAP<K, ROW> union keeping, per key, the row with the greater timestamp field (index).
    MergeMapWithKeyTime(usize),
    /// ARRAY<ROW> upsert by nested key.
    NestedUpdate(Arc<NestedSpec>),
    /// ARRAY<ROW> field-wise partial update by nested key.
    NestedPartialUpdate(Arc<NestedSpec>),
    /// Internal: primary-key fields take the input.
    PrimaryKey,
}

impl AggFunc {
    /// Parse a Paimon function name: Unsupported for a known function this engine does not
    /// implement yet, InvalidArgument for an unknown name; both name the option.
    pub fn parse(option: &str, name: &str) -> Result<AggFunc> {
        Ok(match name.trim() {
            "sum" => AggFunc::Sum,
            "product" => AggFunc::Product,
            "max" => AggFunc::Max,
            "min" => AggFunc::Min,
            "last_value" => AggFunc::LastValue,
            "last_non_null_value" => AggFunc::LastNonNullValue,
            "first_value" => AggFunc::FirstValue,
            "first_non_null_value" | "first_not_null_value" => AggFunc::FirstNonNullValue,
            "listagg" => AggFunc::ListAgg,
            "bool_and" => AggFunc::BoolAnd,
            "bool_or" => AggFunc::BoolOr,
            "rbm32" => AggFunc::Rbm32,
            "theta_sketch" => AggFunc::ThetaSketch,
            "hll_sketch" => AggFunc::HllSketch,
            "collect" => AggFunc::Collect,
            "merge_map" => AggFunc::MergeMap,
            // resolved against the field type by `configure`
            "merge_map_with_keytime" => AggFunc::MergeMapWithKeyTime(usize::MAX),
            "nested_update" => AggFunc::NestedUpdate(Arc::new(NestedSpec::default())),
            "nested_partial_update" => {
                AggFunc::NestedPartialUpdate(Arc::new(NestedSpec::default()))
            }
            "rbm64" => AggFunc::Rbm64,
            other => {
                return Err(Error::invalid(format!(
                    "option '{option}': Use unsupported aggregation: {other} or spell aggregate \
                     function incorrectly! (expected sum, \
                     product, max, min, last_value, last_non_null_value, first_value, \
                     first_non_null_value, listagg, bool_and, bool_or, collect, merge_map, \
                     merge_map_with_keytime, nested_update, nested_partial_update, rbm32, \
                     rbm64, theta_sketch, hll_sketch)"
                )))
            }
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            AggFunc::Sum => "sum",
            AggFunc::Product => "product",
            AggFunc::Max => "max",
            AggFunc::Min => "min",
            AggFunc::LastValue => "last_value",
            AggFunc::LastNonNullValue => "last_non_null_value",
            AggFunc::FirstValue => "first_value",
            AggFunc::FirstNonNullValue => "first_non_null_value",
            AggFunc::ListAgg => "listagg",
            AggFunc::BoolAnd => "bool_and",
            AggFunc::BoolOr => "bool_or",
            AggFunc::Rbm32 => "rbm32",
            AggFunc::Rbm64 => "rbm64",
            AggFunc::ThetaSketch => "theta_sketch",
            AggFunc::HllSketch => "hll_sketch",
            AggFunc::Collect => "collect",
            AggFunc::MergeMap => "merge_map",
            AggFunc::MergeMapWithKeyTime(_) => "merge_map_with_keytime",
            AggFunc::NestedUpdate(_) => "nested_update",
            AggFunc::NestedPartialUpdate(_) => "nested_partial_update",
            AggFunc::PrimaryKey => "primary-key",
        }
    }
}

impl AggFunc {
    /// Check the function against its field's type (Java's factories) and resolve its
    /// `fields.<f>.*` options; `opt(suffix)` reads `fields.<field>.<suffix>`.
    pub fn configure(
        self,
        field: &str,
        t: &DataType,
        opt: &dyn Fn(&str) -> Option<String>,
    ) -> Result<AggFunc> {
        let f = self.name();
        let sql = t.sql_string();
        // Java's factory refusing the type (its words), with the function and field around it
        let java = |sentence: String| {
            Error::invalid(format!(
                "aggregate function '{f}' of field '{field}': {sentence}"
            ))
        };
        let need = |what: &str| java(format!("Data type for {what} but was '{sql}'."));
        let key = |s: &str| format!("fields.{field}.{s}");
        let list = |s: &str| -> Vec<String> {
            opt(s)
                .map(|v| v.split(',').map(|x| x.trim().to_string()).collect())
                .unwrap_or_default()
        };
        let numeric = matches!(
            t.kind,
            TypeKind::TinyInt
                | TypeKind::SmallInt
                | TypeKind::Int
                | TypeKind::BigInt
                | TypeKind::Float
                | TypeKind::Double
                | TypeKind::Decimal { .. }
        );
        let comparable = !matches!(
            t.kind,
            TypeKind::Array(_) | TypeKind::Multiset(_) | TypeKind::Map(..) | TypeKind::Row(_)
        );
        Ok(match self {
            AggFunc::Sum | AggFunc::Product if !numeric => {
                return Err(need(&format!("{f} column must be 'NumericType'")))
            }
            AggFunc::Max | AggFunc::Min if !comparable => {
                return Err(need(&format!("{f} column '{field}' must be comparable")))
            }
            AggFunc::ListAgg if !matches!(t.kind, TypeKind::VarChar(_)) => {
                return Err(need("list agg column must be 'VarCharType'"))
            }
            AggFunc::BoolAnd | AggFunc::BoolOr if !matches!(t.kind, TypeKind::Boolean) => {
                let op = if self == AggFunc::BoolAnd {
                    "and"
                } else {
                    "or"
                };
                return Err(need(&format!("bool {op} column must be 'BooleanType'")));
            }
            AggFunc::Rbm32 | AggFunc::Rbm64 | AggFunc::ThetaSketch | AggFunc::HllSketch => {
                if !matches!(t.kind, TypeKind::VarBinary(_)) {
                    let what = match self {
                        AggFunc::ThetaSketch => "theta sketch",
                        AggFunc::HllSketch => "hll sketch",
                        _ => "roaring bitmap",
                    };
                    return Err(need(&format!("{what} column must be 'VarBinaryType'")));
                }
                self
            }
            AggFunc::Collect => {
                if !matches!(t.kind, TypeKind::Array(_)) {
                    return Err(need("collect column must be 'Array'"));
                }
                self
            }
            AggFunc::MergeMap => {
                if !matches!(t.kind, TypeKind::Map(..)) {
                    // Java's sentence has no full stop
                    return Err(java(format!(
                        "Data type for merge map column must be 'MAP' but was '{sql}'"
                    )));
                }
                self
            }
            AggFunc::MergeMapWithKeyTime(_) => {
                let TypeKind::Map(_, v) = &t.kind else {
                    return Err(java(format!(
                        "Data type for field '{field}' must be 'MAP' but was '{sql}'"
                    )));
                };
                let TypeKind::Row(rf) = &v.kind else {
                    return Err(java(format!(
                        "Value type of MAP for field '{field}' must be ROW but was '{}'",
                        v.sql_string()
                    )));
                };
                if rf.len() < 2 {
                    return Err(java(format!(
                        "ROW type for field '{field}' must have at least 2 fields, but found {}",
                        rf.len()
                    )));
                }
                let ts = match opt("ts-field") {
                    None => rf.len() - 1,
                    Some(n) => rf.iter().position(|x| x.name == n.trim()).ok_or_else(|| {
                        Error::invalid(format!(
                            "option '{}' = '{n}': Timestamp field '{n}' not found in ROW type for \
                             field '{field}'. Available fields: [{}]",
                            key("ts-field"),
                            rf.iter()
                                .map(|x| x.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?,
                };
                // Java reads it with getString and compares strings
                if !matches!(
                    rf[ts].data_type.kind,
                    TypeKind::Char(_) | TypeKind::VarChar(_)
                ) {
                    return Err(Error::invalid(format!(
                        "aggregate function '{f}' of field '{field}': timestamp field '{}' must \
                         be a string (CHAR/VARCHAR), as Paimon compares it as a string; it is {}",
                        rf[ts].name, rf[ts].data_type
                    )));
                }
                AggFunc::MergeMapWithKeyTime(ts)
            }
            AggFunc::NestedUpdate(_) | AggFunc::NestedPartialUpdate(_) => {
                let rf = match &t.kind {
                    TypeKind::Array(e) => match &e.kind {
                        TypeKind::Row(rf) => rf,
                        _ => return Err(need("nested table column must be 'Array<Row>'")),
                    },
                    _ => return Err(need("nested table column must be 'Array<Row>'")),
                };
                let idx = |opt_name: &str, names: Vec<String>| -> Result<Vec<usize>> {
                    names
                        .iter()
                        .filter(|n| !n.is_empty())
                        .map(|n| {
                            rf.iter().position(|x| &x.name == n).ok_or_else(|| {
                                Error::invalid(format!(
                                    "option '{}': '{n}' is not a field of the ROW of field \
                                     '{field}'",
                                    key(opt_name)
                                ))
                            })
                        })
                        .collect()
                };
                let nkey = idx("nested-key", list("nested-key"))?;
                let seq = idx("nested-sequence-field", list("nested-sequence-field"))?;
                let null_key = match opt("nested-key-null-strategy") {
                    None => NullKeyStrategy::Merge,
                    Some(v) => {
                        if nkey.is_empty() {
                            return Err(Error::invalid(format!(
                                "option '{}' requires '{}'",
                                key("nested-key-null-strategy"),
                                key("nested-key")
                            )));
                        }
                        NullKeyStrategy::parse(&key("nested-key-null-strategy"), &v)?
                    }
                };
                let partial = matches!(self, AggFunc::NestedPartialUpdate(_));
                if nkey.is_empty() && (partial || !seq.is_empty()) {
                    let what = if partial {
                        format!("aggregate function '{f}'")
                    } else {
                        format!("option '{}'", key("nested-sequence-field"))
                    };
                    return Err(Error::invalid(format!(
                        "{what} of field '{field}' requires '{}'",
                        key("nested-key")
                    )));
                }
                let count_limit = match opt("count-limit") {
                    None => i32::MAX as usize,
                    Some(v) => v
                        .trim()
                        .parse::<i32>()
                        .ok()
                        .and_then(|n| usize::try_from(n).ok())
                        .ok_or_else(|| {
                            Error::invalid(format!(
                                "option '{}' = '{v}': expected a non-negative integer",
                                key("count-limit")
                            ))
                        })?,
                };
                let spec = Arc::new(NestedSpec {
                    key: nkey,
                    seq,
                    count_limit,
                    null_key,
                });
                if partial {
                    AggFunc::NestedPartialUpdate(spec)
                } else {
                    AggFunc::NestedUpdate(spec)
                }
            }
            other => other,
        })
    }
}

/// A configured aggregator of one field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldAgg {
    pub field: String,
    pub func: AggFunc,
    pub ignore_retract: bool,
    pub delimiter: String,
    pub distinct: bool,
}

/// How the merge reads input cells: their value and nullness.
pub trait CellReader {
    fn datum(&self, c: &Cell) -> Result<Option<Datum>>;
    fn is_null(&self, c: &Cell) -> bool;
    /// The elements of a nested (ARRAY / MAP) cell: list values, or map entries.
    fn elems(&self, c: &Cell) -> Result<Option<ArrayRef>>;
}

fn overflow(field: &str, f: &str) -> Error {
    Error::invalid(format!(
        "aggregate function '{f}' of field '{field}' overflowed"
    ))
}

fn arith(
    field: &str,
    f: &str,
    a: &Datum,
    b: &Datum,
    op: fn(i128, i128) -> Option<i128>,
    fop: fn(f64, f64) -> f64,
) -> Result<Datum> {
    use Datum::*;
    let ov = || overflow(field, f);
    Ok(match (a, b) {
        (TinyInt(x), TinyInt(y)) => TinyInt(
            op(*x as i128, *y as i128)
                .and_then(|v| i8::try_from(v).ok())
                .ok_or_else(ov)?,
        ),
        (SmallInt(x), SmallInt(y)) => SmallInt(
            op(*x as i128, *y as i128)
                .and_then(|v| i16::try_from(v).ok())
                .ok_or_else(ov)?,
        ),
        (Int(x), Int(y)) => Int(op(*x as i128, *y as i128)
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(ov)?),
        (BigInt(x), BigInt(y)) => BigInt(
            op(*x as i128, *y as i128)
                .and_then(|v| i64::try_from(v).ok())
                .ok_or_else(ov)?,
        ),
        (Decimal(x), Decimal(y)) => Decimal(op(*x, *y).ok_or_else(ov)?),
        (Float(x), Float(y)) => Float(fop(*x as f64, *y as f64) as f32),
        (Double(x), Double(y)) => Double(fop(*x, *y)),
        _ => {
            return Err(Error::invalid(format!(
                "aggregate function '{f}' of field '{field}' needs a numeric column"
            )))
        }
    })
}

fn negate(field: &str, a: &Datum) -> Result<Datum> {
    use Datum::*;
    Ok(match a {
        TinyInt(x) => TinyInt(x.checked_neg().ok_or_else(|| overflow(field, "sum"))?),
        SmallInt(x) => SmallInt(x.checked_neg().ok_or_else(|| overflow(field, "sum"))?),
        Int(x) => Int(x.checked_neg().ok_or_else(|| overflow(field, "sum"))?),
        BigInt(x) => BigInt(x.checked_neg().ok_or_else(|| overflow(field, "sum"))?),
        Decimal(x) => Decimal(-x),
        Float(x) => Float(-x),
        Double(x) => Double(-x),
        _ => {
            return Err(Error::invalid(format!(
                "aggregate function 'sum' of field '{field}' needs a numeric column"
            )))
        }
    })
}

fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// Per-field state of one merge: the accumulator and the `initialized` flag of the first_*
/// functions.
#[derive(Debug, Clone)]
pub struct AggState {
    pub acc: Cell,
    pub initialized: bool,
}

impl AggState {
    pub fn new() -> Self {
        AggState {
            acc: Cell::Null,
            initialized: false,
        }
    }
}

impl Default for AggState {
    fn default() -> Self {
        Self::new()
    }
}

impl FieldAgg {
    /// `agg(acc, input)` (or `aggReversed` = `agg(input, acc)` when `reversed`).
    pub fn agg(
        &self,
        st: &mut AggState,
        input: Cell,
        rd: &dyn CellReader,
        reversed: bool,
    ) -> Result<()> {
        // collect's aggReversed is agg: the accumulator is already distinct
        let (acc, inp) = if reversed && !matches!(self.func, AggFunc::Collect) {
            (input, st.acc.clone())
        } else {
            (st.acc.clone(), input)
        };
        let out = self.agg2(st, acc, inp, rd)?;
        st.acc = out;
        Ok(())
    }

    fn agg2(&self, st: &mut AggState, acc: Cell, inp: Cell, rd: &dyn CellReader) -> Result<Cell> {
        let f = self.func.name();
        let field = self.field.as_str();
        let arr = |c: Option<ArrayRef>| c.map_or(Cell::Null, Cell::Arr);
        Ok(match &self.func {
            AggFunc::PrimaryKey | AggFunc::LastValue => inp,
            AggFunc::Collect => arr(nested::collect_agg(
                field,
                rd.elems(&acc)?,
                rd.elems(&inp)?,
                self.distinct,
            )?),
            AggFunc::MergeMap => arr(nested::merge_map_agg(
                field,
                rd.elems(&acc)?,
                rd.elems(&inp)?,
            )?),
            AggFunc::MergeMapWithKeyTime(ts) => arr(nested::keytime_agg(
                field,
                rd.elems(&acc)?,
                rd.elems(&inp)?,
                *ts,
            )?),
            AggFunc::NestedUpdate(spec) => arr(nested::nested_update_agg(
                field,
                rd.elems(&acc)?,
                rd.elems(&inp)?,
                spec,
            )?),
            AggFunc::NestedPartialUpdate(spec) => arr(nested::nested_partial_update_agg(
                field,
                rd.elems(&acc)?,
                rd.elems(&inp)?,
                spec,
            )?),
            AggFunc::LastNonNullValue => {
                if rd.is_null(&inp) {
                    acc
                } else {
                    inp
                }
            }
            AggFunc::FirstValue => {
                if !st.initialized {
                    st.initialized = true;
                    inp
                } else {
                    acc
                }
            }
            AggFunc::FirstNonNullValue => {
                if !st.initialized && !rd.is_null(&inp) {
                    st.initialized = true;
                    inp
                } else {
                    acc
                }
            }
            AggFunc::Max | AggFunc::Min => {
                let (Some(a), Some(b)) = (rd.datum(&acc)?, rd.datum(&inp)?) else {
                    return Ok(if rd.is_null(&inp) { acc } else { inp });
                };
                let o = a.compare(&b).ok_or_else(|| {
                    Error::invalid(format!("'{f}' of field '{}': incomparable", self.field))
                })?;
                let take_input = if matches!(self.func, AggFunc::Max) {
                    o == Ordering::Less
                } else {
                    o == Ordering::Greater
                };
                if take_input {
                    inp
                } else {
                    acc
                }
            }
            AggFunc::Sum | AggFunc::Product => {
                let (a, b) = (rd.datum(&acc)?, rd.datum(&inp)?);
                match (a, b) {
                    (_, None) => acc,
                    (None, Some(_)) => inp,
                    (Some(a), Some(b)) => Cell::Val(if matches!(self.func, AggFunc::Sum) {
                        arith(&self.field, f, &a, &b, i128::checked_add, |x, y| x + y)?
                    } else {
                        arith(&self.field, f, &a, &b, i128::checked_mul, |x, y| x * y)?
                    }),
                }
            }
            AggFunc::BoolAnd | AggFunc::BoolOr => match (rd.datum(&acc)?, rd.datum(&inp)?) {
                (_, None) => acc,
                (None, Some(_)) => inp,
                (Some(Datum::Bool(a)), Some(Datum::Bool(b))) => {
                    Cell::Val(Datum::Bool(if matches!(self.func, AggFunc::BoolAnd) {
                        a && b
                    } else {
                        a || b
                    }))
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "aggregate function '{f}' of field '{}' needs a BOOLEAN column",
                        self.field
                    )))
                }
            },
            AggFunc::Rbm32 | AggFunc::Rbm64 | AggFunc::ThetaSketch | AggFunc::HllSketch => {
                match (rd.datum(&acc)?, rd.datum(&inp)?) {
                    (_, None) => acc,
                    (None, Some(_)) => inp,
                    (Some(Datum::Bytes(a)), Some(Datum::Bytes(b))) => {
                        let union = match self.func {
                            AggFunc::Rbm32 => sketch::rbm32_union,
                            AggFunc::Rbm64 => rbm64::rbm64_union,
                            AggFunc::ThetaSketch => sketch::theta_union,
                            _ => sketch::hll_union,
                        };
                        Cell::Val(Datum::Bytes(union(field, &a, &b)?))
                    }
                    _ => {
                        return Err(Error::invalid(format!(
                            "aggregate function '{f}' of field '{field}' needs a VARBINARY \
                             column"
                        )))
                    }
                }
            }
            AggFunc::ListAgg => {
                let s = |c: &Cell| -> Result<Option<String>> {
                    match rd.datum(c)? {
                        None => Ok(None),
                        Some(Datum::String(s)) => Ok(Some(s)),
                        Some(_) => Err(Error::invalid(format!(
                            "aggregate function 'listagg' of field '{}' needs a string column",
                            self.field
                        ))),
                    }
                };
                let (a, b) = (s(&acc)?, s(&inp)?);
                let b = match b {
                    Some(b) if !is_blank(&b) => b,
                    _ => return Ok(acc),
                };
                let a = match a {
                    Some(a) if !is_blank(&a) => a,
                    _ => return Ok(inp),
                };
                let d = &self.delimiter;
                if self.distinct {
                    let mut seen: std::collections::HashSet<String> =
                        a.split(d.as_str()).map(str::to_string).collect();
                    let mut out = a.clone();
                    for tok in b.split(d.as_str()) {
                        if is_blank(tok) || seen.contains(tok) {
                            continue;
                        }
                        seen.insert(tok.to_string());
                        out.push_str(d);
                        out.push_str(tok);
                    }
                    Cell::Val(Datum::String(out))
                } else {
                    Cell::Val(Datum::String(format!("{a}{d}{b}")))
                }
            }
        })
    }

    /// `retract(acc, input)`.
    pub fn retract(&self, st: &mut AggState, inp: Cell, rd: &dyn CellReader) -> Result<()> {
        if self.ignore_retract {
            return Ok(());
        }
        let f = self.func.name();
        let field = self.field.as_str();
        let acc = st.acc.clone();
        let arr = |c: Option<ArrayRef>| c.map_or(Cell::Null, Cell::Arr);
        st.acc = match &self.func {
            AggFunc::PrimaryKey => inp,
            AggFunc::Collect => arr(nested::collect_retract(
                field,
                rd.elems(&acc)?,
                rd.elems(&inp)?,
            )?),
            AggFunc::MergeMap => arr(nested::merge_map_retract(
                field,
                rd.elems(&acc)?,
                rd.elems(&inp)?,
            )?),
            AggFunc::NestedUpdate(spec) => arr(nested::nested_update_retract(
                field,
                rd.elems(&acc)?,
                rd.elems(&inp)?,
                spec,
            )?),
            AggFunc::LastValue => Cell::Null,
            AggFunc::LastNonNullValue => {
                if rd.is_null(&inp) {
                    acc
                } else {
                    Cell::Null
                }
            }
            AggFunc::Sum => match (rd.datum(&acc)?, rd.datum(&inp)?) {
                (_, None) => acc,
                (None, Some(b)) => Cell::Val(negate(&self.field, &b)?),
                (Some(a), Some(b)) => {
                    Cell::Val(arith(&self.field, f, &a, &b, i128::checked_sub, |x, y| {
                        x - y
                    })?)
                }
            },
            AggFunc::Product => match (rd.datum(&acc)?, rd.datum(&inp)?) {
                (_, None) => acc,
                (None, Some(_)) => Cell::Null,
                (Some(a), Some(b)) => {
                    Cell::Val(arith(&self.field, f, &a, &b, i128::checked_div, |x, y| {
                        x / y
                    })?)
                }
            },
            _ => {
                return Err(Error::unsupported(format!(
                    "field '{}' (a -U/-D record): Aggregate function '{f}' does not support \
                     retraction, If you allow this function to ignore retraction messages, you \
                     can configure 'fields.${{field_name}}.ignore-retract'='true'. (here \
                     'fields.{}.ignore-retract' = 'true', or use ignore-delete)",
                    self.field, self.field
                )))
            }
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Vals;
    impl CellReader for Vals {
        fn datum(&self, c: &Cell) -> Result<Option<Datum>> {
            Ok(match c {
                Cell::Val(d) => Some(d.clone()),
                _ => None,
            })
        }
        fn is_null(&self, c: &Cell) -> bool {
            !matches!(c, Cell::Val(_) | Cell::Arr(_))
        }
        fn elems(&self, c: &Cell) -> Result<Option<ArrayRef>> {
            Ok(match c {
                Cell::Arr(a) => Some(a.clone()),
                _ => None,
            })
        }
    }

    fn ser(v: &[u32]) -> Vec<u8> {
        let b: roaring::RoaringBitmap = v.iter().copied().collect();
        let mut out = vec![];
        b.serialize_into(&mut out).unwrap();
        out
    }

    /// Aggregates `inputs` (bytes of one bitmap each, then a null) with `func`, expects
    /// `want`, a refused retraction and an error naming the function for bad bytes.
    fn check_bitmap_union(func: &str, inputs: [Vec<u8>; 3], want: Vec<u8>) {
        let f = FieldAgg {
            field: "b".into(),
            func: AggFunc::parse("fields.b.aggregate-function", func).unwrap(),
            ignore_retract: false,
            delimiter: ",".into(),
            distinct: false,
        };
        let mut st = AggState::new();
        for v in inputs {
            f.agg(&mut st, Cell::Val(Datum::Bytes(v)), &Vals, false)
                .unwrap();
        }
        f.agg(&mut st, Cell::Null, &Vals, false).unwrap();
        assert_eq!(st.acc, Cell::Val(Datum::Bytes(want.clone())));
        assert!(f
            .retract(&mut st, Cell::Val(Datum::Bytes(want)), &Vals)
            .unwrap_err()
            .to_string()
            .contains("ignore-retract"));
        let bad = f.agg(&mut st, Cell::Val(Datum::Bytes(vec![1, 2])), &Vals, false);
        let e = bad.unwrap_err().to_string();
        assert!(e.contains(func) && e.contains("'b'"), "{e}");
    }

    #[test]
    fn rbm32_unions_and_refuses_retract() {
        let inputs = [ser(&[1, 5]), ser(&[]), ser(&[5, 70000])];
        check_bitmap_union("rbm32", inputs, ser(&[1, 5, 70000]));
    }

    #[test]
    fn rbm64_unions_and_refuses_retract() {
        let ser = |v: &[u64]| rbm64::Rbm64::java_bitmap_of(v).serialize();
        let inputs = [ser(&[2, 3]), ser(&[]), ser(&[1, 1 << 40])];
        check_bitmap_union("rbm64", inputs, ser(&[2, 3, 1, 1 << 40]));
    }
}
