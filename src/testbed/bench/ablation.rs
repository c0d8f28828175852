//! `fedsched bench --ablate NAME[,NAME]|all` (issue 51, "every memo earns its place"): each
//! memo of the registry ([`crate::util::memo::Name`]) switched off against every memo on, in
//! the same process and on the same warm reconciler, alternating (on then off in even rounds,
//! off then on in odd ones), `runs` rounds. A memo switched off computes every time with its
//! own compute function ([`crate::util::memo::switch_off`]).
//!
//! Per side, one sample of each asked scenario: S1 (the schedule phase of the loaded inputs,
//! with deductions: [`super::schedule_all`]), S3 (a no-change pass, the watch quiet), S4 (one
//! template edited, the watch naming its file; put back after, unmeasured) and S7 (a new
//! reconciler on the same store and its first pass: the restart without opening the store).
//! The first row, `none`, switches nothing off: every memo on against every memo on, the
//! noise of the run.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::publish::Trigger;
use crate::reconcile::{Changed, PhaseTimings, Reconciler, Settings};
use crate::schedule::profile::Profiles;
use crate::testbed::simulate::repo;
use crate::util::memo::{self, Name};

use super::{Bench, BenchError, Figure, Scenario, Sink, load, median_f, pass, pass_watched, placed_anywhere, settle};

/// The scenarios an ablation measures, in order.
const MEASURED: [Scenario; 4] = [Scenario::S1, Scenario::S3, Scenario::S4, Scenario::S7];

/// Per row (`None`: nothing off) and scenario, the samples with every memo on and with the
/// row's memo off, in ms.
type Samples = BTreeMap<(usize, Scenario), (Vec<f64>, Vec<f64>)>;

impl Bench {
    /// The ablation of `memos` (see the module documentation) on `rec`, settled; `wants` the
    /// scenarios asked for (of [`MEASURED`]).
    pub(super) fn ablation(
        &mut self,
        rec: &Reconciler,
        memos: &[Name],
        wants: &dyn Fn(Scenario) -> bool,
        sink: &mut Sink<'_>,
    ) -> Result<(), BenchError> {
        let rows: Vec<Option<Name>> = std::iter::once(None).chain(memos.iter().copied().map(Some)).collect();
        let scenarios: Vec<Scenario> = MEASURED.into_iter().filter(|s| wants(*s)).collect();
        let edits = self.placed_workloads(rec, 8)?;
        let profiles = Profiles::builtin();
        let mut samples = Samples::new();
        let mut edit = 0usize;
        for round in 0..self.runs {
            for (row, name) in rows.iter().enumerate() {
                let sides = match round % 2 {
                    0 => [false, true],
                    _ => [true, false],
                };
                for off in sides {
                    let switched: Vec<Name> = name.filter(|_| off).into_iter().collect();
                    memo::switch_off(&switched);
                    let measured = self.sample(rec, &profiles, &scenarios, edits[edit % edits.len()]);
                    memo::switch_off(&[]);
                    edit += 1;
                    for (s, ms) in measured? {
                        let entry = samples.entry((row, s)).or_default();
                        match off {
                            true => entry.1.push(ms),
                            false => entry.0.push(ms),
                        }
                    }
                    settle(&self.fix, rec, &self.out, &mut self.now)?;
                }
            }
        }
        for ((row, s), (on, off)) in &samples {
            let name = rows[*row].map_or("none (every memo on twice: the noise)", Name::as_str);
            let (m_on, m_off) = (median_f(on), median_f(off));
            sink.put(Figure::new(*s, format!("ablation {name}: every memo on"), "ms", on.clone()));
            sink.put(Figure::new(*s, format!("ablation {name}: off"), "ms", off.clone()));
            let ratio = if m_on > 0.0 { m_off / m_on } else { 0.0 };
            sink.put(Figure::new(*s, format!("ablation {name}: off / on"), "×", vec![ratio]));
        }
        Ok(())
    }

    /// Up to `n` workloads with a target cluster, spread over the repository (the edits of S4).
    fn placed_workloads(&self, rec: &Reconciler, n: usize) -> Result<Vec<usize>, BenchError> {
        let w = self.fix.spec.workloads.max(1);
        let mut out = Vec::new();
        for c in 0..w {
            if out.len() == n {
                break;
            }
            let i = (c * 7919 + 11) % w;
            if placed_anywhere(rec, i)? {
                out.push(i);
            }
        }
        match out.is_empty() {
            true => Err(BenchError::Check("ablation: no workload is placed anywhere".into())),
            false => Ok(out),
        }
    }

    /// One sample of each of `scenarios` with the memos as they are switched now; S4 edits
    /// workload `edit` and puts it back.
    fn sample(
        &mut self,
        rec: &Reconciler,
        profiles: &Profiles,
        scenarios: &[Scenario],
        edit: usize,
    ) -> Result<Vec<(Scenario, f64)>, BenchError> {
        let mut out = Vec::new();
        for &s in scenarios {
            let ms = match s {
                Scenario::S1 => {
                    let inputs = load(&self.fix, rec, &mut PhaseTimings::default(), self.now)?;
                    super::schedule_all(&inputs, profiles, self.now, true).0.as_secs_f64() * 1e3
                }
                Scenario::S3 => {
                    self.now += 1000;
                    let changed = &Changed::Nothing;
                    let (_, wall) = pass_watched(&self.fix, rec, &self.out, (Trigger::Timer, self.now), changed)?;
                    wall.as_secs_f64() * 1e3
                }
                Scenario::S4 => {
                    self.edit_workload(edit)?;
                    let changed = Changed::Files(vec![repo::workload_file(edit).into()]);
                    let (report, wall) =
                        pass_watched(&self.fix, rec, &self.out, (Trigger::PolicyChange, self.now), &changed)?;
                    if report.files_written == 0 {
                        return Err(BenchError::Check(format!("ablation: editing workload {edit} rewrote no file")));
                    }
                    self.restore_workload(edit)?;
                    self.edits_restored()?;
                    self.now += 1000;
                    pass_watched(&self.fix, rec, &self.out, (Trigger::PolicyChange, self.now), &changed)?;
                    wall.as_secs_f64() * 1e3
                }
                Scenario::S7 => {
                    let started = Instant::now();
                    let r = Reconciler::new(rec.store.clone(), Settings::builtin());
                    self.now += 1000;
                    let (report, _) = pass(&self.fix, &r, &self.out, Trigger::Startup, self.now)?;
                    let wall = started.elapsed();
                    if report.files_written != 0 {
                        return Err(BenchError::Check(format!(
                            "ablation: a restart rewrote files: {}",
                            report.summary()
                        )));
                    }
                    wall.as_secs_f64() * 1e3
                }
                _ => continue,
            };
            out.push((s, ms));
        }
        Ok(out)
    }
}
