//! The universal compaction picker, for simulation from Python
//! (`paimon_rs.compaction.UniversalCompaction`).

use std::collections::BTreeMap;

use paimon_rs_core::{reason_name, PickClock, RunShape, UniversalCompaction as Picker};
use pyo3::prelude::*;

use crate::errors::IntoPy;

#[pyclass(module = "paimon_rs._core")]
pub struct UniversalCompaction {
    inner: Picker,
}

#[pymethods]
impl UniversalCompaction {
    #[new]
    #[pyo3(signature = (options, legacy_size_ratio_scan=false))]
    fn new(options: BTreeMap<String, String>, legacy_size_ratio_scan: bool) -> PyResult<Self> {
        let mut inner = Picker::from_options(&options).py_err()?;
        if legacy_size_ratio_scan {
            inner = inner.with_legacy_size_ratio_scan();
        }
        Ok(UniversalCompaction { inner })
    }

    /// Pick for `runs` = [(level, size)] listed newest first; returns
    /// (number of leading runs taken, output level, reason) or None.
    #[pyo3(signature = (num_levels, runs, now_millis=None, local_hour=None))]
    fn pick(
        &mut self,
        num_levels: usize,
        runs: Vec<(i32, u64)>,
        now_millis: Option<i64>,
        local_hour: Option<u32>,
    ) -> PyResult<Option<(usize, i32, &'static str)>> {
        if num_levels < 2 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "num_levels must be at least 2",
            ));
        }
        if let Some(r) = runs.iter().find(|r| r.0 < 0 || r.0 as usize >= num_levels) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "run level {} is outside 0..{num_levels}",
                r.0
            )));
        }
        let now = PickClock::now();
        let clock = PickClock {
            now_millis: now_millis.unwrap_or(now.now_millis),
            local_hour: local_hour.unwrap_or(now.local_hour),
        };
        let shapes: Vec<RunShape> = runs
            .iter()
            .map(|&(level, size)| RunShape { level, size })
            .collect();
        Ok(self
            .inner
            .pick(num_levels, &shapes, clock)
            .map(|p| (p.runs, p.output_level, reason_name(p.reason))))
    }
}
