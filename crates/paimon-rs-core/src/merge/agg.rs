//! Field aggregators of the `aggregation` engine and of aggregated partial-update fields
//! (paimon-behaviour.md §8.4). Values are merged one key at a time, so accumulators are
//! [`Cell`]s: a reference to an input cell (no copy; nested types stay Arrow) or a computed
//! [`Datum`].

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::spec::datum::Datum;

/// One accumulated value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    /// Row `row` of the value column in source batch `src`.
    Pick(u32, u32),
    Val(Datum),
}

/// The aggregate functions this engine implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
            f @ ("collect"
            | "merge_map"
            | "merge_map_with_keytime"
            | "nested_update"
            | "nested_partial_update"
            | "rbm32"
            | "rbm64"
            | "theta_sketch"
            | "hll_sketch") => {
                return Err(Error::unsupported(format!(
                    "option '{option}' = '{f}': this aggregate function is not implemented by \
                     paimon_rs yet"
                )))
            }
            other => {
                return Err(Error::invalid(format!(
                    "option '{option}' = '{other}': unknown aggregate function (expected sum, \
                     product, max, min, last_value, last_non_null_value, first_value, \
                     first_non_null_value, listagg, bool_and, bool_or, collect, merge_map, \
                     nested_update, rbm32, rbm64, theta_sketch, hll_sketch)"
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
            AggFunc::PrimaryKey => "primary-key",
        }
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

/// Union of two serialized Roaring bitmaps (portable format, as Java's RoaringBitmap writes).
fn rbm32_union(field: &str, a: &[u8], b: &[u8]) -> Result<Vec<u8>> {
    let de = |x: &[u8]| {
        roaring::RoaringBitmap::deserialize_from(x).map_err(|e| {
            Error::invalid(format!(
                "aggregate function 'rbm32' of field '{field}': not a serialized Roaring bitmap: {e}"
            ))
        })
    };
    let mut u = de(a)?;
    u |= de(b)?;
    let mut out = Vec::with_capacity(u.serialized_size());
    u.serialize_into(&mut out)
        .map_err(|e| Error::Internal(format!("rbm32 serialization: {e}")))?;
    Ok(out)
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
        let (acc, inp) = if reversed {
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
        Ok(match self.func {
            AggFunc::PrimaryKey | AggFunc::LastValue => inp,
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
                let take_input = if self.func == AggFunc::Max {
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
                    (Some(a), Some(b)) => Cell::Val(if self.func == AggFunc::Sum {
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
                    Cell::Val(Datum::Bool(if self.func == AggFunc::BoolAnd {
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
            AggFunc::Rbm32 => match (rd.datum(&acc)?, rd.datum(&inp)?) {
                (_, None) => acc,
                (None, Some(_)) => inp,
                (Some(Datum::Bytes(a)), Some(Datum::Bytes(b))) => {
                    Cell::Val(Datum::Bytes(rbm32_union(&self.field, &a, &b)?))
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "aggregate function 'rbm32' of field '{}' needs a VARBINARY column",
                        self.field
                    )))
                }
            },
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
        let acc = st.acc.clone();
        st.acc = match self.func {
            AggFunc::PrimaryKey => inp,
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
                    "aggregate function '{f}' of field '{}' cannot retract a -U/-D record; set \
                     'fields.{}.ignore-retract' = 'true' or use ignore-delete",
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
            !matches!(c, Cell::Val(_))
        }
    }

    fn ser(v: &[u32]) -> Vec<u8> {
        let b: roaring::RoaringBitmap = v.iter().copied().collect();
        let mut out = vec![];
        b.serialize_into(&mut out).unwrap();
        out
    }

    #[test]
    fn rbm32_unions_and_refuses_retract() {
        let f = FieldAgg {
            field: "b".into(),
            func: AggFunc::Rbm32,
            ignore_retract: false,
            delimiter: ",".into(),
            distinct: false,
        };
        let mut st = AggState::new();
        for v in [&[1u32, 5][..], &[], &[5, 70000]] {
            f.agg(&mut st, Cell::Val(Datum::Bytes(ser(v))), &Vals, false)
                .unwrap();
        }
        f.agg(&mut st, Cell::Null, &Vals, false).unwrap();
        assert_eq!(st.acc, Cell::Val(Datum::Bytes(ser(&[1, 5, 70000]))));
        assert!(f
            .retract(&mut st, Cell::Val(Datum::Bytes(ser(&[1]))), &Vals)
            .unwrap_err()
            .to_string()
            .contains("ignore-retract"));
        let bad = f.agg(&mut st, Cell::Val(Datum::Bytes(vec![1, 2])), &Vals, false);
        assert!(bad.unwrap_err().to_string().contains("rbm32"));
    }
}
