//! Row kinds of key-value records (Paimon's `RowKind`), stored as the `_VALUE_KIND` byte of a
//! primary-key data file (paimon-format.md §6.1).

/// A change a record carries: insert, update before/after, delete. The discriminant is Paimon's
/// byte value (`RowKind.toByteValue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum RowKind {
    /// `+I`
    Insert = 0,
    /// `-U`
    UpdateBefore = 1,
    /// `+U`
    UpdateAfter = 2,
    /// `-D`
    Delete = 3,
}

impl RowKind {
    /// The `_VALUE_KIND` byte.
    pub const fn byte(self) -> i8 {
        self as i8
    }

    /// The kind of a `_VALUE_KIND` byte; None for a byte that is no row kind.
    pub const fn from_byte(b: i8) -> Option<RowKind> {
        match b {
            0 => Some(RowKind::Insert),
            1 => Some(RowKind::UpdateBefore),
            2 => Some(RowKind::UpdateAfter),
            3 => Some(RowKind::Delete),
            _ => None,
        }
    }

    /// Paimon's short string (`+I`, `-U`, `+U`, `-D`).
    pub const fn short_string(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }

    /// The kind of a short string (`rowkind.field` values).
    pub fn from_short_string(s: &str) -> Option<RowKind> {
        [
            RowKind::Insert,
            RowKind::UpdateBefore,
            RowKind::UpdateAfter,
            RowKind::Delete,
        ]
        .into_iter()
        .find(|k| k.short_string() == s)
    }

    /// `-U` or `-D`: the record retracts its key.
    #[cfg(test)]
    pub const fn is_retract(self) -> bool {
        matches!(self, RowKind::UpdateBefore | RowKind::Delete)
    }
}

/// Whether a `_VALUE_KIND` byte retracts (`-U`, `-D`), on the hot path without decoding.
#[inline]
pub fn is_retract_byte(b: i8) -> bool {
    b == RowKind::UpdateBefore.byte() || b == RowKind::Delete.byte()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_strings_round_trip() {
        for (b, s) in [(0i8, "+I"), (1, "-U"), (2, "+U"), (3, "-D")] {
            let k = RowKind::from_byte(b).unwrap();
            assert_eq!(k.byte(), b);
            assert_eq!(k.short_string(), s);
            assert_eq!(RowKind::from_short_string(s), Some(k));
            assert_eq!(k.is_retract(), is_retract_byte(b));
        }
        assert_eq!(RowKind::from_byte(4), None);
        assert_eq!(RowKind::from_short_string("+X"), None);
        assert!(RowKind::Delete.is_retract() && !RowKind::UpdateAfter.is_retract());
    }
}
