//! Universal compaction: which sorted runs of a bucket to merge, and into which level
//! (paimon-behaviour.md §3). A pure policy: it sees only each run's level and size, does no I/O,
//! and takes the clock as an argument, so it is simulated and tested on run shapes alone and
//! compared with Java's `UniversalCompaction` decision for decision.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::options::{parse_duration_ms, parse_memory_size, CoreOptions};

/// What the picker sees of one sorted run: its level and total size in bytes. Runs are handed
/// over newest first (paimon-behaviour.md §2.2): level-0 files by descending max sequence
/// number, then levels 1, 2, … in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunShape {
    pub level: i32,
    pub size: u64,
}

/// A picked compaction: the first `runs` runs of the list, merged into `output_level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactPick {
    pub runs: usize,
    pub output_level: i32,
    /// Why: for `compaction_plan()` and logs.
    pub reason: PickReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickReason {
    /// `compaction.optimization-interval`, `.total-size-threshold` or
    /// `.incremental-size-threshold` (§3.3).
    EarlyFull,
    /// `compaction.max-size-amplification-percent` (§3.1 step 1).
    SizeAmplification,
    /// `compaction.size-ratio` (§3.1 step 2).
    SizeRatio,
    /// More runs than `num-sorted-run.compaction-trigger` (§3.1 step 3).
    RunCount,
    /// Level-0 files forced up for tables that read through lookup (§3.5).
    ForceUpLevel0,
}

/// How a lookup table forces level-0 files up (`lookup-compact`, §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupCompact {
    Radical,
    Gentle { max_interval: u32 },
}

/// The moment a pick is made: the writer's wall clock and its local hour (for off-peak hours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PickClock {
    pub now_millis: i64,
    pub local_hour: u32,
}

impl PickClock {
    pub fn now() -> Self {
        use chrono::Timelike;
        PickClock {
            now_millis: chrono::Utc::now().timestamp_millis(),
            local_hour: chrono::Local::now().hour(),
        }
    }
}

/// The universal picker with Paimon's options. Holds the one piece of state Java's keeps: when
/// the last full compaction happened (for `compaction.optimization-interval`), and the gentle
/// lookup counter.
#[derive(Debug, Clone)]
pub struct UniversalCompaction {
    max_size_amp: u64,
    size_ratio: u64,
    trigger: usize,
    offpeak: Option<(u32, u32, u64)>,
    optimization_interval_ms: Option<u64>,
    total_size_threshold: Option<u64>,
    incremental_size_threshold: Option<u64>,
    /// `None`: plain universal. `Some`: force level-0 files up (§3.5).
    force_up_level0: Option<LookupCompact>,
    /// Java master absorbs failing level-0/1 runs once a scan is triggered (§3.2); the 1.0 and
    /// 0.9 jars stop at the first failing run. True by default (master).
    absorb_level1: bool,
    last_full_millis: Option<i64>,
    gentle_counter: u32,
}

fn opt<'a>(o: &'a BTreeMap<String, String>, k: &str) -> Option<&'a str> {
    o.get(k).map(|s| s.trim())
}

fn int_opt<T: std::str::FromStr>(o: &BTreeMap<String, String>, k: &str) -> Result<Option<T>> {
    match opt(o, k) {
        None => Ok(None),
        Some(v) => v.parse::<T>().map(Some).map_err(|_| {
            Error::invalid(format!(
                "option '{k}' = '{v}' is not a valid number for compaction"
            ))
        }),
    }
}

impl UniversalCompaction {
    /// Build from table options with Paimon's keys and defaults (§3, §13), parsed as the
    /// table's [`CoreOptions`] (a primary-key table's).
    pub fn from_options(o: &BTreeMap<String, String>) -> Result<Self> {
        Self::from_core_options(&CoreOptions::new(o, true)?)
    }

    /// Build from a table's parsed options: the compaction settings of [`CoreOptions`], and
    /// the picker-only options (off-peak hours, early full compaction, lookup-compact) from
    /// its raw map.
    pub fn from_core_options(core: &CoreOptions) -> Result<Self> {
        let o = &core.raw;
        let trigger = core.num_sorted_run_compaction_trigger;
        let max_size_amp = core.compaction_max_size_amplification_percent;
        let size_ratio = core.compaction_size_ratio;
        let start: i64 = int_opt(o, "compaction.offpeak.start.hour")?.unwrap_or(-1);
        let end: i64 = int_opt(o, "compaction.offpeak.end.hour")?.unwrap_or(-1);
        let offpeak_ratio: u64 = int_opt(o, "compaction.offpeak-ratio")?.unwrap_or(0);
        let valid_hour = |h: i64| (0..=23).contains(&h);
        let offpeak = if start == -1 && end == -1 {
            None
        } else if !valid_hour(start) || !valid_hour(end) {
            return Err(Error::invalid(format!(
                "options 'compaction.offpeak.start.hour' ({start}) and \
                 'compaction.offpeak.end.hour' ({end}) must both be hours 0..23, or both -1"
            )));
        } else if start == end {
            None
        } else {
            Some((start as u32, end as u32, offpeak_ratio))
        };
        let optimization_interval_ms = opt(o, "compaction.optimization-interval")
            .map(|v| parse_duration_ms("compaction.optimization-interval", v))
            .transpose()?;
        let total_size_threshold = opt(o, "compaction.total-size-threshold")
            .map(|v| parse_memory_size("compaction.total-size-threshold", v))
            .transpose()?;
        let incremental_size_threshold = opt(o, "compaction.incremental-size-threshold")
            .map(|v| parse_memory_size("compaction.incremental-size-threshold", v))
            .transpose()?;
        let default_interval = (2 * trigger) as u32;
        let lookup = match opt(o, "lookup-compact")
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("radical") => LookupCompact::Radical,
            Some("gentle") => {
                let n: u32 = int_opt(o, "lookup-compact.max-interval")?.unwrap_or(default_interval);
                LookupCompact::Gentle {
                    max_interval: n.max(trigger as u32),
                }
            }
            Some(other) => {
                return Err(Error::invalid(format!(
                    "option 'lookup-compact' = '{other}': expected 'radical' or 'gentle'"
                )))
            }
        };
        let truthy = |k: &str| opt(o, k).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let needs_lookup = core.needs_lookup()?;
        let force_up_level0 = if truthy("compaction.force-up-level-0") {
            // Without lookup the forced pick is always radical (§3.5 step 2).
            Some(if needs_lookup {
                lookup
            } else {
                LookupCompact::Radical
            })
        } else if needs_lookup {
            Some(lookup)
        } else {
            None
        };
        Ok(UniversalCompaction {
            max_size_amp,
            size_ratio,
            trigger,
            offpeak,
            optimization_interval_ms,
            total_size_threshold,
            incremental_size_threshold,
            force_up_level0,
            absorb_level1: true,
            last_full_millis: None,
            gentle_counter: 0,
        })
    }

    /// Java 1.0 / 0.9 scan rule (stop at the first run failing the size ratio), for comparing
    /// decisions with those jars.
    pub fn with_legacy_size_ratio_scan(mut self) -> Self {
        self.absorb_level1 = false;
        self
    }

    /// Seed the interval clock: the newest creation time of files already at the max level
    /// (§3.3), as a writer does on start.
    pub fn set_last_full_compaction(&mut self, millis: Option<i64>) {
        self.last_full_millis = millis;
    }

    /// Forces level-0 files up at every pick (`lookup-compact = radical`, or
    /// `compaction.force-up-level-0`).
    pub fn radical(&self) -> bool {
        self.force_up_level0 == Some(LookupCompact::Radical)
    }

    /// The gentle lookup-compact counter: picks since the last forced one (§3.5 step 3).
    pub fn gentle_counter(&self) -> u32 {
        self.gentle_counter
    }

    pub fn set_gentle_counter(&mut self, n: u32) {
        self.gentle_counter = n;
    }

    pub fn compaction_trigger(&self) -> usize {
        self.trigger
    }

    /// Pick a compaction for a bucket with `num_levels` levels and these runs (newest first).
    pub fn pick(
        &mut self,
        num_levels: usize,
        runs: &[RunShape],
        clock: PickClock,
    ) -> Option<CompactPick> {
        let universal = self.pick_universal(num_levels, runs, clock);
        let Some(mode) = self.force_up_level0 else {
            return universal;
        };
        if universal.is_some() {
            return universal;
        }
        if let LookupCompact::Gentle { max_interval } = mode {
            self.gentle_counter += 1;
            if self.gentle_counter < max_interval {
                return None;
            }
            self.gentle_counter = 0;
        }
        let level0 = runs.iter().take_while(|r| r.level == 0).count();
        if level0 == 0 {
            return None;
        }
        self.size_ratio_scan(num_levels, runs, level0, true, clock)
            .map(|p| CompactPick {
                reason: PickReason::ForceUpLevel0,
                ..p
            })
    }

    fn pick_universal(
        &mut self,
        num_levels: usize,
        runs: &[RunShape],
        clock: PickClock,
    ) -> Option<CompactPick> {
        let max_level = num_levels as i32 - 1;
        let n = runs.len();
        let all = |reason| CompactPick {
            runs: n,
            output_level: max_level,
            reason,
        };
        if n > 1 && self.early_full(max_level, runs, clock) {
            self.last_full_millis = Some(clock.now_millis);
            return Some(all(PickReason::EarlyFull));
        }
        if n < self.trigger {
            return None;
        }
        // Step 1: size amplification.
        let candidate: u128 = runs[..n - 1].iter().map(|r| r.size as u128).sum();
        let earliest = runs[n - 1].size as u128;
        if candidate * 100 > self.max_size_amp as u128 * earliest {
            self.last_full_millis = Some(clock.now_millis);
            return Some(all(PickReason::SizeAmplification));
        }
        // Step 2: size ratio, starting from the newest run.
        if let Some(p) = self.size_ratio_scan(num_levels, runs, 1, false, clock) {
            return Some(p);
        }
        // Step 3: too many runs.
        if n > self.trigger {
            return self
                .size_ratio_scan(num_levels, runs, n - self.trigger + 1, false, clock)
                .map(|p| CompactPick {
                    reason: PickReason::RunCount,
                    ..p
                });
        }
        None
    }

    fn early_full(&self, max_level: i32, runs: &[RunShape], clock: PickClock) -> bool {
        if let Some(interval) = self.optimization_interval_ms {
            match self.last_full_millis {
                None => return true,
                Some(last) if clock.now_millis - last > interval as i64 => return true,
                _ => {}
            }
        }
        if let Some(t) = self.total_size_threshold {
            if runs.iter().map(|r| r.size as u128).sum::<u128>() < t as u128 {
                return true;
            }
        }
        if let Some(t) = self.incremental_size_threshold {
            let inc: u128 = runs
                .iter()
                .filter(|r| r.level != max_level)
                .map(|r| r.size as u128)
                .sum();
            if inc > t as u128 {
                return true;
            }
        }
        false
    }

    fn offpeak_ratio(&self, hour: u32) -> u64 {
        match self.offpeak {
            Some((start, end, ratio)) => {
                let inside = if start <= end {
                    start <= hour && hour < end
                } else {
                    hour < end || hour >= start
                };
                if inside {
                    ratio
                } else {
                    0
                }
            }
            None => 0,
        }
    }

    /// The size-ratio scan of §3.1 starting with `start` candidates.
    fn size_ratio_scan(
        &mut self,
        num_levels: usize,
        runs: &[RunShape],
        start: usize,
        forced: bool,
        clock: PickClock,
    ) -> Option<CompactPick> {
        let factor = (100 + self.size_ratio + self.offpeak_ratio(clock.local_hour)) as f64 / 100.0;
        let mut size: u128 = runs[..start].iter().map(|r| r.size as u128).sum();
        let mut count = start;
        let mut triggered = forced || start > 1;
        for next in &runs[start..] {
            // Java compares in floating point: `size * (100 + ratio) / 100.0 < next`.
            if (size as f64) * factor < next.size as f64
                && (!triggered || !self.absorb_level1 || next.level > 1)
            {
                break;
            }
            size += next.size as u128;
            count += 1;
            triggered = true;
        }
        if !triggered {
            return None;
        }
        Some(self.create_unit(num_levels, runs, count, clock))
    }

    fn create_unit(
        &mut self,
        num_levels: usize,
        runs: &[RunShape],
        mut count: usize,
        clock: PickClock,
    ) -> CompactPick {
        let max_level = num_levels as i32 - 1;
        let mut output = if count == runs.len() {
            max_level
        } else {
            (runs[count].level - 1).max(0)
        };
        if output == 0 {
            // Never write compaction output to level 0: absorb runs until a non-zero level.
            for next in &runs[count..] {
                count += 1;
                if next.level != 0 {
                    output = next.level;
                    break;
                }
            }
        }
        if count == runs.len() {
            // Taking every run is a full compaction: restart the interval clock (§3.3).
            self.last_full_millis = Some(clock.now_millis);
            output = max_level;
        }
        CompactPick {
            runs: count,
            output_level: output,
            reason: PickReason::SizeRatio,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(spec: &[(i32, u64)]) -> Vec<RunShape> {
        spec.iter()
            .map(|&(level, size)| RunShape { level, size })
            .collect()
    }

    fn picker(kv: &[(&str, &str)]) -> UniversalCompaction {
        let o: BTreeMap<String, String> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        UniversalCompaction::from_options(&o).unwrap()
    }

    const CLOCK: PickClock = PickClock {
        now_millis: 1_000_000,
        local_hour: 12,
    };

    fn pick(p: &mut UniversalCompaction, levels: usize, r: &[(i32, u64)]) -> Option<(usize, i32)> {
        p.pick(levels, &runs(r), CLOCK)
            .map(|u| (u.runs, u.output_level))
    }

    #[test]
    fn below_the_trigger_nothing_is_picked() {
        let mut p = picker(&[]);
        assert_eq!(pick(&mut p, 6, &[(0, 1), (0, 1), (0, 1), (0, 1)]), None);
    }

    #[test]
    fn size_amplification_takes_everything_to_the_max_level() {
        // (1 + 1) * 100 > 200 * 1 is false: not by amplification (the size ratio takes all).
        let mut p = picker(&[("num-sorted-run.compaction-trigger", "3")]);
        let u = p.pick(3, &runs(&[(0, 1), (0, 1), (2, 1)]), CLOCK).unwrap();
        assert_eq!(
            (u.runs, u.output_level, u.reason),
            (3, 2, PickReason::SizeRatio)
        );
        let mut p = picker(&[("num-sorted-run.compaction-trigger", "3")]);
        let u = p
            .pick(3, &runs(&[(0, 10), (0, 10), (2, 5)]), CLOCK)
            .unwrap();
        assert_eq!(
            (u.runs, u.output_level, u.reason),
            (3, 2, PickReason::SizeAmplification)
        );
    }

    #[test]
    fn create_unit_output_levels_of_the_worked_example() {
        // §3.1: maxLevel 5, runs at levels [0,0,1,3,4].
        let mut p = picker(&[]);
        let r = runs(&[(0, 1), (0, 1), (1, 1), (3, 1), (4, 1)]);
        let got: Vec<(usize, i32)> = (1..=5)
            .map(|c| {
                let u = p.create_unit(6, &r, c, CLOCK);
                (u.runs, u.output_level)
            })
            .collect();
        assert_eq!(got, vec![(3, 1), (3, 1), (3, 2), (4, 3), (5, 5)]);
    }

    #[test]
    fn level1_absorption_differs_between_master_and_the_old_jars() {
        // §3.2: trigger 3, ratio 1, amp 200; runs L0:10, L0:20, L1:97, L2:100.
        let o = [("num-sorted-run.compaction-trigger", "3")];
        let r = [(0, 10), (0, 20), (1, 97), (2, 100)];
        assert_eq!(pick(&mut picker(&o), 3, &r), Some((4, 2)));
        let mut legacy = picker(&o).with_legacy_size_ratio_scan();
        assert_eq!(pick(&mut legacy, 3, &r), Some((3, 1)));
    }

    #[test]
    fn forced_level0_examples_of_the_semantics_doc() {
        // §3.5 (amp 200, ratio 1, trigger 5, 3 levels), for a first-row table.
        let o = [("merge-engine", "first-row")];
        type Case<'a> = (&'a [(i32, u64)], Option<(usize, i32)>);
        let cases: &[Case] = &[
            (&[(0, 1), (0, 1)], Some((2, 2))),
            (&[(0, 1), (1, 10)], Some((2, 2))),
            (&[(0, 1), (0, 5), (2, 10)], Some((2, 1))),
            (&[(2, 10)], None),
            (&[(0, 1), (1, 99), (2, 100)], Some((3, 2))),
            (&[(0, 1), (1, 99), (2, 102)], Some((2, 1))),
        ];
        for (r, want) in cases {
            assert_eq!(pick(&mut picker(&o), 3, r), *want, "runs {r:?}");
        }
    }

    #[test]
    fn gentle_lookup_compaction_forces_only_every_max_interval_picks() {
        let o = [
            ("changelog-producer", "lookup"),
            ("lookup-compact", "gentle"),
            ("lookup-compact.max-interval", "3"),
            ("num-sorted-run.compaction-trigger", "3"),
        ];
        let mut p = picker(&o);
        let r = [(0, 1), (2, 100)];
        assert_eq!(pick(&mut p, 3, &r), None);
        assert_eq!(pick(&mut p, 3, &r), None);
        // the third pick forces the level-0 file up, into level 1 (below the L2 run)
        assert_eq!(pick(&mut p, 3, &r), Some((1, 1)));
        assert_eq!(pick(&mut p, 3, &r), None);
    }

    #[test]
    fn early_full_compaction_options() {
        let mut p = picker(&[("compaction.total-size-threshold", "100 b")]);
        assert_eq!(pick(&mut p, 6, &[(0, 10), (5, 50)]), Some((2, 5)));
        assert_eq!(
            pick(&mut p, 6, &[(5, 50)]),
            None,
            "a single run is never early-full"
        );
        let mut p = picker(&[("compaction.incremental-size-threshold", "10 b")]);
        assert_eq!(pick(&mut p, 6, &[(0, 11), (5, 50)]), Some((2, 5)));
        assert_eq!(pick(&mut p, 6, &[(0, 9), (5, 50)]), None);
        let mut p = picker(&[("compaction.optimization-interval", "1 s")]);
        assert_eq!(pick(&mut p, 6, &[(0, 1), (5, 50)]), Some((2, 5)));
        // just compacted: not again within the interval
        assert_eq!(pick(&mut p, 6, &[(0, 1), (5, 50)]), None);
        let later = PickClock {
            now_millis: CLOCK.now_millis + 1001,
            local_hour: 12,
        };
        assert!(p.pick(6, &runs(&[(0, 1), (5, 50)]), later).is_some());
    }

    #[test]
    fn offpeak_hours_raise_the_size_ratio() {
        let o = [
            ("num-sorted-run.compaction-trigger", "2"),
            ("compaction.max-size-amplification-percent", "100000"),
            ("compaction.offpeak.start.hour", "22"),
            ("compaction.offpeak.end.hour", "6"),
            ("compaction.offpeak-ratio", "100"),
        ];
        let r = runs(&[(0, 10), (5, 15)]);
        let day = PickClock {
            now_millis: 0,
            local_hour: 12,
        };
        let night = PickClock {
            now_millis: 0,
            local_hour: 23,
        };
        assert_eq!(picker(&o).pick(6, &r, day), None);
        assert_eq!(picker(&o).pick(6, &r, night).map(|u| u.runs), Some(2));
    }

    proptest::proptest! {
        /// Invariants of every pick: a non-empty prefix, never output level 0, output at or above
        /// every picked run and below the first run left out, everything taken → max level.
        #[test]
        fn picks_respect_the_level_structure(
            l0 in proptest::collection::vec(1u64..1000, 0..8),
            upper in proptest::collection::btree_map(1i32..5, 1u64..5000, 0..4),
            trigger in 1usize..6,
            force in proptest::bool::ANY,
        ) {
            let mut r: Vec<RunShape> = l0.iter().map(|&size| RunShape { level: 0, size }).collect();
            r.extend(upper.iter().map(|(&level, &size)| RunShape { level, size }));
            let t = trigger.to_string();
            let mut kv = vec![("num-sorted-run.compaction-trigger", t.as_str())];
            if force {
                kv.push(("compaction.force-up-level-0", "true"));
            }
            let mut p = picker(&kv);
            if let Some(u) = p.pick(5, &r, CLOCK) {
                proptest::prop_assert!(u.runs >= 1 && u.runs <= r.len());
                proptest::prop_assert!(u.output_level >= 1 && u.output_level <= 4);
                proptest::prop_assert!(r[..u.runs].iter().all(|x| x.level <= u.output_level));
                if u.runs == r.len() {
                    proptest::prop_assert_eq!(u.output_level, 4);
                } else {
                    proptest::prop_assert!(r[u.runs].level > u.output_level);
                }
            } else if r.len() > trigger {
                // More runs than the trigger always compact something.
                proptest::prop_assert!(false, "no pick for {:?}", r);
            }
        }
    }

    #[test]
    fn bad_options_are_refused_naming_the_option() {
        let o: BTreeMap<String, String> = [(
            "compaction.offpeak.start.hour".to_string(),
            "25".to_string(),
        )]
        .into();
        let e = UniversalCompaction::from_options(&o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("compaction.offpeak.start.hour"), "{e}");
        let o: BTreeMap<String, String> =
            [("lookup-compact".to_string(), "lazy".to_string())].into();
        let e = UniversalCompaction::from_options(&o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("lookup-compact"), "{e}");
    }
}
