//! Split packing of a primary-key bucket for a batch read (paimon-behaviour.md §6.2). The
//! interval partition it builds on lives in [`crate::compact::interval`].

use crate::error::Result;
use crate::spec::manifest::DataFileMeta;
use crate::spec::types::DataType;

use crate::compact::interval::interval_partition;

/// Ordered bin packing: close the bin before an item that would push it over `target` (unless
/// the bin is empty).
pub fn ordered_pack<T>(items: Vec<T>, weight: impl Fn(&T) -> u64, target: u64) -> Vec<Vec<T>> {
    let mut bins = vec![];
    let mut bin = vec![];
    let mut w = 0u64;
    for it in items {
        let x = weight(&it);
        if !bin.is_empty() && w + x > target {
            bins.push(std::mem::take(&mut bin));
            w = 0;
        }
        w += x;
        bin.push(it);
    }
    if !bin.is_empty() {
        bins.push(bin);
    }
    bins
}

fn no_deletes(f: &DataFileMeta) -> bool {
    f.delete_row_count.unwrap_or(0) == 0
}

/// Split one bucket's files for a batch read: groups of files and whether each group can be read
/// by concatenation (paimon-behaviour.md §6.2). `skip_level0`: the scan hid level 0 (first-row
/// and deletion-vector tables), so files above it hold each key once and need no merge.
pub fn split_bucket(
    files: Vec<DataFileMeta>,
    key_types: &[DataType],
    target: u64,
    open_cost: u64,
    skip_level0: bool,
) -> Result<Vec<(Vec<DataFileMeta>, bool)>> {
    let w = |f: &DataFileMeta| (f.file_size.max(0) as u64).max(open_cost);
    let raw_convertible = files.iter().all(|f| f.level != 0 && no_deletes(f));
    let one_level = files.windows(2).all(|p| p[0].level == p[1].level);
    if raw_convertible && (skip_level0 || one_level) {
        return Ok(ordered_pack(files, w, target)
            .into_iter()
            .map(|g| (g, true))
            .collect());
    }
    let sections: Vec<Vec<DataFileMeta>> = interval_partition(files, key_types)?
        .into_iter()
        .map(|runs| runs.into_iter().flatten().collect())
        .collect();
    let packed = ordered_pack(
        sections,
        |s: &Vec<DataFileMeta>| {
            (s.iter().map(|f| f.file_size.max(0) as u64).sum::<u64>()).max(open_cost)
        },
        target,
    );
    Ok(packed
        .into_iter()
        .map(|secs| {
            let files: Vec<DataFileMeta> = secs.into_iter().flatten().collect();
            let raw = files.len() == 1 && no_deletes(&files[0]);
            (files, raw)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::interval::tests::file;
    use crate::spec::types::TypeKind;

    #[test]
    fn split_packing_doc_example() {
        let t = vec![DataType::new(TypeKind::Int)];
        let fs = || {
            vec![
                file("1", 0, 10, 11, 0),
                file("2", 0, 12, 13, 0),
                file("3", 15, 60, 46, 0),
                file("4", 18, 40, 23, 0),
                file("5", 82, 85, 4, 0),
                file("6", 100, 200, 101, 0),
            ]
        };
        let ids = |s: Vec<(Vec<DataFileMeta>, bool)>| -> Vec<Vec<String>> {
            s.into_iter()
                .map(|(g, _)| {
                    let mut v: Vec<String> = g.into_iter().map(|f| f.file_name).collect();
                    v.sort();
                    v
                })
                .collect()
        };
        let s = split_bucket(fs(), &t, 100, 2, false).unwrap();
        assert_eq!(ids(s), vec![vec!["1", "2", "3", "4", "5"], vec!["6"]]);
        let s = split_bucket(fs(), &t, 100, 30, false).unwrap();
        let raw: Vec<bool> = s.iter().map(|x| x.1).collect();
        assert_eq!(ids(s), vec![vec!["1", "2", "3", "4"], vec!["5"], vec!["6"]]);
        assert_eq!(raw, vec![false, true, true]);
        // all on one level >= 1 without deletes: files packed raw
        let fs = vec![file("a", 0, 5, 10, 1), file("b", 6, 9, 10, 1)];
        let s = split_bucket(fs, &t, 100, 2, false).unwrap();
        assert_eq!(s.len(), 1);
        assert!(s[0].1);
    }
}
