//! Filters: evaluated exactly on Arrow batches, and conservatively ("may match") on partition
//! values and file min/max statistics for pruning.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use arrow::compute::kernels::cmp;
use arrow::compute::prep_null_mask_filter;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, Scalar};
use arrow_row::{Row, RowConverter, SortField};

use crate::error::{Error, Result};
use crate::spec::binary_row::datums_to_arrow;
use crate::spec::datum::Datum;
use crate::spec::types::DataType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafOp {
    Equal,
    NotEqual,
    LessThan,
    LessOrEqual,
    GreaterThan,
    GreaterOrEqual,
    IsNull,
    IsNotNull,
    In,
    NotIn,
    Between,
    NotBetween,
    StartsWith,
    EndsWith,
    Contains,
    /// SQL LIKE: `%` any sequence, `_` one character, `\` escapes them (and itself).
    Like,
}

impl LeafOp {
    pub fn parse(s: &str) -> Result<Self> {
        use LeafOp::*;
        Ok(match s {
            "equal" => Equal,
            "not_equal" => NotEqual,
            "less_than" => LessThan,
            "less_or_equal" => LessOrEqual,
            "greater_than" => GreaterThan,
            "greater_or_equal" => GreaterOrEqual,
            "is_null" => IsNull,
            "is_not_null" => IsNotNull,
            "is_in" => In,
            "is_not_in" => NotIn,
            "between" => Between,
            "not_between" => NotBetween,
            "startswith" => StartsWith,
            "endswith" => EndsWith,
            "contains" => Contains,
            "like" => Like,
            other => return Err(Error::invalid(format!("unknown predicate '{other}'"))),
        })
    }

    fn arity(&self) -> Option<usize> {
        use LeafOp::*;
        match self {
            IsNull | IsNotNull => Some(0),
            Between | NotBetween => Some(2),
            In | NotIn => None,
            _ => Some(1),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    Leaf {
        field: String,
        op: LeafOp,
        literals: Vec<Option<Datum>>,
    },
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
}

/// Statistics of one column over a set of rows (a file, or one partition value).
#[derive(Debug, Clone)]
pub struct ColumnStat {
    pub min: Option<Datum>,
    pub max: Option<Datum>,
    pub null_count: Option<i64>,
    pub row_count: i64,
}

fn lt(a: &Datum, b: &Datum) -> bool {
    a.compare(b) == Some(std::cmp::Ordering::Less)
}
fn le(a: &Datum, b: &Datum) -> bool {
    matches!(
        a.compare(b),
        Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
    )
}

impl Predicate {
    pub fn leaf(field: &str, op: LeafOp, literals: Vec<Option<Datum>>) -> Result<Self> {
        if let Some(n) = op.arity() {
            if literals.len() != n {
                return Err(Error::invalid(format!(
                    "predicate {op:?} on '{field}' takes {n} literal(s), got {}",
                    literals.len()
                )));
            }
        }
        Ok(Predicate::Leaf {
            field: field.to_string(),
            op,
            literals,
        })
    }

    pub fn fields(&self) -> BTreeSet<String> {
        let mut s = BTreeSet::new();
        self.collect_fields(&mut s);
        s
    }

    fn collect_fields(&self, s: &mut BTreeSet<String>) {
        match self {
            Predicate::Leaf { field, .. } => {
                s.insert(field.clone());
            }
            Predicate::And(c) | Predicate::Or(c) => c.iter().for_each(|p| p.collect_fields(s)),
        }
    }

    /// The part of this predicate that only uses `fields` (an AND keeps the usable children;
    /// an OR is usable only as a whole). Anything it lets through, `self` might too.
    pub fn restrict_to(&self, fields: &[String]) -> Option<Predicate> {
        match self {
            Predicate::Leaf { field, .. } => fields.contains(field).then(|| self.clone()),
            Predicate::And(c) => {
                let kept: Vec<_> = c.iter().filter_map(|p| p.restrict_to(fields)).collect();
                match kept.len() {
                    0 => None,
                    1 => kept.into_iter().next(),
                    _ => Some(Predicate::And(kept)),
                }
            }
            Predicate::Or(c) => {
                let kept: Vec<_> = c.iter().filter_map(|p| p.restrict_to(fields)).collect();
                (kept.len() == c.len()).then_some(Predicate::Or(kept))
            }
        }
    }

    /// Exact evaluation; SQL semantics (a comparison with null is not true).
    pub fn evaluate(
        &self,
        batch: &RecordBatch,
        type_of: &dyn Fn(&str) -> Option<DataType>,
    ) -> Result<BooleanArray> {
        let r = match self {
            Predicate::And(c) => {
                let mut acc = BooleanArray::from(vec![true; batch.num_rows()]);
                for p in c {
                    acc = arrow::compute::and(&acc, &p.evaluate(batch, type_of)?)?;
                }
                acc
            }
            Predicate::Or(c) => {
                let mut acc = BooleanArray::from(vec![false; batch.num_rows()]);
                for p in c {
                    acc = arrow::compute::or(&acc, &p.evaluate(batch, type_of)?)?;
                }
                acc
            }
            Predicate::Leaf {
                field,
                op,
                literals,
            } => {
                let col = batch.column_by_name(field).ok_or_else(|| {
                    Error::invalid(format!("filter column '{field}' is not in the table"))
                })?;
                let t = type_of(field).ok_or_else(|| {
                    Error::invalid(format!("filter column '{field}' is not in the table"))
                })?;
                eval_leaf(col, &t, *op, literals)?
            }
        };
        Ok(if r.null_count() > 0 {
            prep_null_mask_filter(&r)
        } else {
            r
        })
    }

    /// Might any row with these column stats match? Unknown stats answer true.
    pub fn test(&self, stat_of: &dyn Fn(&str) -> Option<ColumnStat>) -> bool {
        match self {
            Predicate::And(c) => c.iter().all(|p| p.test(stat_of)),
            Predicate::Or(c) => c.iter().any(|p| p.test(stat_of)),
            Predicate::Leaf {
                field,
                op,
                literals,
            } => match stat_of(field) {
                None => true,
                Some(s) => test_leaf(&s, *op, literals),
            },
        }
    }
}

fn test_leaf(s: &ColumnStat, op: LeafOp, lits: &[Option<Datum>]) -> bool {
    use LeafOp::*;
    let all_null = s.row_count > 0 && s.null_count == Some(s.row_count);
    match op {
        IsNull => s.null_count.map(|n| n > 0).unwrap_or(true),
        IsNotNull => !all_null,
        _ if all_null => false,
        _ => {
            let (Some(min), Some(max)) = (&s.min, &s.max) else {
                return true;
            };
            let lit = |i: usize| lits.get(i).and_then(|x| x.as_ref());
            match op {
                Equal => lit(0).map(|v| le(min, v) && le(v, max)).unwrap_or(false),
                NotEqual => match lit(0) {
                    None => false,
                    Some(v) => {
                        !(min.compare(v) == Some(std::cmp::Ordering::Equal)
                            && max.compare(v) == Some(std::cmp::Ordering::Equal))
                    }
                },
                LessThan => lit(0).map(|v| lt(min, v)).unwrap_or(false),
                LessOrEqual => lit(0).map(|v| le(min, v)).unwrap_or(false),
                GreaterThan => lit(0).map(|v| lt(v, max)).unwrap_or(false),
                GreaterOrEqual => lit(0).map(|v| le(v, max)).unwrap_or(false),
                In => lits.iter().flatten().any(|v| le(min, v) && le(v, max)),
                NotIn => {
                    // all rows equal to one listed value: nothing can match
                    let single = min.compare(max) == Some(std::cmp::Ordering::Equal);
                    let listed = lits
                        .iter()
                        .flatten()
                        .any(|v| v.compare(min) == Some(std::cmp::Ordering::Equal));
                    let has_null = lits.iter().any(|v| v.is_none());
                    !(has_null || single && listed)
                }
                Between => match (lit(0), lit(1)) {
                    (Some(a), Some(b)) => le(a, max) && le(min, b),
                    _ => false,
                },
                StartsWith => match (lit(0), min, max) {
                    (Some(Datum::String(p)), Datum::String(lo), Datum::String(hi)) => {
                        // some string in [lo, hi] may start with p
                        !(hi.as_bytes() < p.as_bytes()
                            || (!lo.starts_with(p.as_str()) && lo.as_bytes() > p.as_bytes()))
                    }
                    _ => true,
                },
                NotBetween => match (lit(0), lit(1)) {
                    // some row lies outside [a, b]
                    (Some(a), Some(b)) => lt(min, a) || lt(b, max),
                    _ => false,
                },
                // no bound on where a suffix, substring or pattern falls: never prune
                EndsWith | Contains | Like => true,
                IsNull | IsNotNull => true,
            }
        }
    }
}

fn scalar(t: &DataType, v: &Option<Datum>) -> Result<Scalar<ArrayRef>> {
    Ok(Scalar::new(datums_to_arrow(t, std::slice::from_ref(v))?))
}

fn eval_leaf(
    col: &ArrayRef,
    t: &DataType,
    op: LeafOp,
    lits: &[Option<Datum>],
) -> Result<BooleanArray> {
    use LeafOp::*;
    let n = col.len();
    let none = || BooleanArray::from(vec![false; n]);
    Ok(match op {
        IsNull => arrow::compute::is_null(col.as_ref())?,
        IsNotNull => arrow::compute::is_not_null(col.as_ref())?,
        Equal | NotEqual | LessThan | LessOrEqual | GreaterThan | GreaterOrEqual => {
            let Some(v) = lits.first() else {
                return Ok(none());
            };
            if v.is_none() {
                return Ok(none());
            }
            let s = scalar(t, v)?;
            match op {
                Equal => cmp::eq(col, &s)?,
                NotEqual => cmp::neq(col, &s)?,
                LessThan => cmp::lt(col, &s)?,
                LessOrEqual => cmp::lt_eq(col, &s)?,
                GreaterThan => cmp::gt(col, &s)?,
                _ => cmp::gt_eq(col, &s)?,
            }
        }
        In => {
            if let Some(r) = in_set(col, t, lits, true)? {
                return Ok(r);
            }
            let mut acc = none();
            for v in lits.iter().filter(|v| v.is_some()) {
                acc = arrow::compute::or(&acc, &cmp::eq(col, &scalar(t, v)?)?)?;
            }
            acc
        }
        NotIn => {
            if lits.iter().any(|v| v.is_none()) {
                // x NOT IN (.., NULL) is never true in SQL
                return Ok(none());
            }
            if let Some(r) = in_set(col, t, lits, false)? {
                return Ok(r);
            }
            let mut acc = arrow::compute::is_not_null(col.as_ref())?;
            for v in lits {
                acc = arrow::compute::and(&acc, &cmp::neq(col, &scalar(t, v)?)?)?;
            }
            acc
        }
        Between => {
            let (Some(a), Some(b)) = (lits.first(), lits.get(1)) else {
                return Ok(none());
            };
            if a.is_none() || b.is_none() {
                return Ok(none());
            }
            arrow::compute::and(
                &cmp::gt_eq(col, &scalar(t, a)?)?,
                &cmp::lt_eq(col, &scalar(t, b)?)?,
            )?
        }
        NotBetween => {
            let (Some(a), Some(b)) = (lits.first(), lits.get(1)) else {
                return Ok(none());
            };
            if a.is_none() || b.is_none() {
                return Ok(none());
            }
            arrow::compute::or(
                &cmp::lt(col, &scalar(t, a)?)?,
                &cmp::gt(col, &scalar(t, b)?)?,
            )?
        }
        StartsWith | EndsWith | Contains | Like => {
            let name = format!("{op:?}").to_lowercase();
            let Some(Some(Datum::String(p))) = lits.first() else {
                return Err(Error::invalid(format!("{name} takes a string literal")));
            };
            if !t.is_string() {
                return Err(Error::invalid(format!(
                    "{name} on non-string column of type {t}"
                )));
            }
            let pat: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![p.as_str()]));
            let pat = Scalar::new(pat);
            use arrow::compute::kernels::comparison as k;
            match op {
                StartsWith => k::starts_with(col, &pat)?,
                EndsWith => k::ends_with(col, &pat)?,
                Contains => k::contains(col, &pat)?,
                _ => k::like(col, &pat)?,
            }
        }
    })
}

/// Lists at least this long are matched through a hash set (one lookup per row); shorter
/// ones by one vectorised comparison per literal, cheaper than encoding the column.
const IN_SET_MIN: usize = 8;

/// `IN` (`keep_listed`) / `NOT IN` over a long list: the column and the non-null literals are
/// encoded by one `RowConverter` (typed, the same equality as the comparison kernels: floats
/// by total order) and each row looked up in a hash set of the literals' encodings, so the cost
/// is rows + literals, not rows x literals. A null row never matches (SQL); the caller handles
/// a null literal. `None`: the list is short or the column type has no row encoding, compare
/// literal by literal.
fn in_set(
    col: &ArrayRef,
    t: &DataType,
    lits: &[Option<Datum>],
    keep_listed: bool,
) -> Result<Option<BooleanArray>> {
    let present: Vec<Option<Datum>> = lits.iter().filter(|v| v.is_some()).cloned().collect();
    if present.len() < IN_SET_MIN {
        return Ok(None);
    }
    let mut listed = datums_to_arrow(t, &present)?;
    if listed.data_type() != col.data_type() {
        // e.g. a dictionary-encoded or large-string column: the literals in its type (a literal
        // the type cannot hold becomes null and so matches no row)
        match arrow::compute::cast(&listed, col.data_type()) {
            Ok(a) => listed = a,
            Err(_) => return Ok(None),
        }
    }
    let Ok(conv) = RowConverter::new(vec![SortField::new(col.data_type().clone())]) else {
        return Ok(None);
    };
    let listed = conv.convert_columns(&[listed])?;
    let set: HashSet<Row<'_>> = listed.iter().collect();
    let rows = conv.convert_columns(std::slice::from_ref(col))?;
    let hit: Vec<bool> = (0..col.len())
        .map(|i| col.is_valid(i) && set.contains(&rows.row(i)) == keep_listed)
        .collect();
    Ok(Some(BooleanArray::from(hit)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{Field, Schema};

    fn stat(min: Datum, max: Datum) -> ColumnStat {
        ColumnStat {
            min: Some(min),
            max: Some(max),
            null_count: Some(0),
            row_count: 10,
        }
    }

    fn s(v: &str) -> Option<Datum> {
        Some(Datum::String(v.to_string()))
    }

    #[test]
    fn string_matchers_never_prune_a_file_that_may_hold_a_match() {
        // "abc".."abd" holds "abcz", which ends with "z", contains "cz" and is like "%z"
        let st = stat(Datum::String("abc".into()), Datum::String("abd".into()));
        for (op, lit) in [
            (LeafOp::EndsWith, "z"),
            (LeafOp::Contains, "cz"),
            (LeafOp::Like, "%z"),
        ] {
            let p = Predicate::leaf("c", op, vec![s(lit)]).unwrap();
            assert!(p.test(&|_| Some(st.clone())), "{op:?} pruned a file");
        }
        // a column that is all null in the file cannot match
        let nulls = ColumnStat {
            min: None,
            max: None,
            null_count: Some(10),
            row_count: 10,
        };
        let p = Predicate::leaf("c", LeafOp::Contains, vec![s("x")]).unwrap();
        assert!(!p.test(&|_| Some(nulls.clone())));
    }

    #[test]
    fn not_between_prunes_only_files_inside_the_range() {
        let p = Predicate::leaf(
            "x",
            LeafOp::NotBetween,
            vec![Some(Datum::BigInt(10)), Some(Datum::BigInt(20))],
        )
        .unwrap();
        let t = |lo: i64, hi: i64| p.test(&|_| Some(stat(Datum::BigInt(lo), Datum::BigInt(hi))));
        assert!(!t(10, 20), "every row inside [10, 20]");
        assert!(!t(12, 15));
        assert!(t(9, 15), "9 lies outside");
        assert!(t(15, 21), "21 lies outside");
        assert!(t(0, 100));
    }

    #[test]
    fn evaluation_of_the_new_operators() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("c", arrow_schema::DataType::Utf8, true),
            Field::new("x", arrow_schema::DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec![
                    Some("apple"),
                    Some("a_c"),
                    Some("abc"),
                    None,
                ])),
                Arc::new(Int64Array::from(vec![Some(5), Some(10), Some(25), None])),
            ],
        )
        .unwrap();
        let type_of = |f: &str| -> Option<DataType> {
            Some(if f == "c" {
                DataType::new(crate::spec::types::TypeKind::VarChar(i32::MAX as u32))
            } else {
                DataType::new(crate::spec::types::TypeKind::BigInt)
            })
        };
        let eval = |op: LeafOp, lits: Vec<Option<Datum>>| -> Vec<bool> {
            let p = Predicate::leaf(if lits.len() == 2 { "x" } else { "c" }, op, lits).unwrap();
            let r = p.evaluate(&batch, &type_of).unwrap();
            (0..r.len()).map(|i| r.value(i)).collect()
        };
        assert_eq!(
            eval(LeafOp::EndsWith, vec![s("c")]),
            [false, true, true, false]
        );
        assert_eq!(
            eval(LeafOp::Contains, vec![s("pp")]),
            [true, false, false, false]
        );
        assert_eq!(
            eval(LeafOp::Like, vec![s("a_c")]),
            [false, true, true, false]
        );
        assert_eq!(
            eval(LeafOp::Like, vec![s("a\\_c")]),
            [false, true, false, false]
        );
        assert_eq!(
            eval(LeafOp::Like, vec![s("%e")]),
            [true, false, false, false]
        );
        assert_eq!(
            eval(
                LeafOp::NotBetween,
                vec![Some(Datum::BigInt(6)), Some(Datum::BigInt(20))]
            ),
            [true, false, true, false]
        );
    }

    /// `IN` / `NOT IN` as SQL says, literal by literal (the model of the hash-set evaluation).
    fn in_model(rows: &[Option<Datum>], lits: &[Option<Datum>], keep_listed: bool) -> Vec<bool> {
        let null_listed = lits.iter().any(|l| l.is_none());
        rows.iter()
            .map(|r| match r {
                None => false,
                Some(v) => {
                    let listed = lits
                        .iter()
                        .flatten()
                        .any(|l| v.compare(l) == Some(std::cmp::Ordering::Equal));
                    if keep_listed {
                        listed
                    } else {
                        !listed && !null_listed
                    }
                }
            })
            .collect()
    }

    fn check_in(
        kind: crate::spec::types::TypeKind,
        rows: Vec<Option<Datum>>,
        lits: Vec<Option<Datum>>,
    ) {
        let t = DataType::new(kind);
        let col = datums_to_arrow(&t, &rows).unwrap();
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "x",
                col.data_type().clone(),
                true,
            )])),
            vec![col],
        )
        .unwrap();
        for (op, keep) in [(LeafOp::In, true), (LeafOp::NotIn, false)] {
            let p = Predicate::leaf("x", op, lits.clone()).unwrap();
            let r = p.evaluate(&batch, &|_| Some(t.clone())).unwrap();
            let got: Vec<bool> = (0..r.len()).map(|i| r.value(i)).collect();
            assert_eq!(
                got,
                in_model(&rows, &lits, keep),
                "{op:?} {lits:?} over {rows:?}"
            );
        }
    }

    #[test]
    fn a_long_in_list_is_matched_through_a_hash_set() {
        let t = DataType::new(crate::spec::types::TypeKind::BigInt);
        let col: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3)]));
        let lits: Vec<_> = (0..IN_SET_MIN as i64)
            .map(|i| Some(Datum::BigInt(i)))
            .collect();
        let r = in_set(&col, &t, &lits, true)
            .unwrap()
            .expect("the hash-set path");
        assert_eq!(r, BooleanArray::from(vec![true, false, true]));
        let r = in_set(&col, &t, &lits, false)
            .unwrap()
            .expect("the hash-set path");
        assert_eq!(r, BooleanArray::from(vec![false, false, false]));
        assert!(in_set(&col, &t, &lits[..2], true).unwrap().is_none());
    }

    proptest::proptest! {
        #[test]
        fn in_and_not_in_match_sql_on_ints(
            rows in proptest::collection::vec(proptest::option::of(-20i64..20), 0..40),
            lits in proptest::collection::vec(proptest::option::weighted(0.95, -20i64..20), 0..30),
        ) {
            let d = |v: Vec<Option<i64>>| v.into_iter().map(|x| x.map(Datum::BigInt)).collect();
            check_in(crate::spec::types::TypeKind::BigInt, d(rows), d(lits));
        }

        #[test]
        fn in_and_not_in_match_sql_on_strings(
            rows in proptest::collection::vec(proptest::option::of("[a-c]{0,2}"), 0..40),
            lits in proptest::collection::vec(proptest::option::weighted(0.95, "[a-c]{0,2}"), 0..30),
        ) {
            let d = |v: Vec<Option<String>>| v.into_iter().map(|x| x.map(Datum::String)).collect();
            check_in(crate::spec::types::TypeKind::VarChar(i32::MAX as u32), d(rows), d(lits));
        }

        #[test]
        fn in_and_not_in_match_sql_on_doubles(
            rows in proptest::collection::vec(proptest::option::of(proptest::sample::select(vec![0.0, -0.0, 1.5, f64::NAN, f64::INFINITY])), 0..40),
            lits in proptest::collection::vec(proptest::option::weighted(0.95, proptest::sample::select(vec![0.0, -0.0, 1.5, f64::NAN, 2.0])), 0..30),
        ) {
            let d = |v: Vec<Option<f64>>| v.into_iter().map(|x| x.map(Datum::Double)).collect();
            check_in(crate::spec::types::TypeKind::Double, d(rows), d(lits));
        }
    }
}
