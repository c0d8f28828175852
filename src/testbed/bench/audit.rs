//! S11: the daemon's self-audit (issue 46, `[audit] interval`) on the settled fleet: a dry run
//! of the store, the repository loaded again from the pass's files, the live view without its
//! memos, a cold preview — and the warm preview on the daemon's reconciler it is compared
//! with ([`Reconciler::audit`]). Beside it, in the same invocation, a no-change pass of the
//! same reconciler: the audit's cost in passes. A correct reconciler differs in nothing (a
//! difference fails the scenario).

use std::time::Instant;

use super::{Bench, BenchError, Figure, Scenario, Sink, load, pass_watched};
use crate::reconcile::{Changed, PhaseTimings, Reconciler, Settings};

impl Bench {
    /// S11: the wall time of a self-audit, its fresh side, and a no-change pass beside it.
    pub(super) fn s11_audit(&mut self, rec: &Reconciler, sink: &mut Sink<'_>) -> Result<(), BenchError> {
        rec.store.flush()?;
        let (mut walls, mut fresh, mut passes) = (Vec::new(), Vec::new(), Vec::new());
        let mut workloads = 0;
        for _ in 0..self.runs {
            self.now += 1000;
            let (_, wall) =
                pass_watched(&self.fix, rec, &self.out, (crate::publish::Trigger::Timer, self.now), &Changed::Nothing)?;
            passes.push(wall);
            let inputs = load(&self.fix, rec, &mut PhaseTimings::default(), self.now)?;
            let started = Instant::now();
            let live = self.fix.live.borrow().clone();
            let audit = rec.audit(Settings::builtin(), &inputs, &live, &self.out, self.now)?;
            walls.push(started.elapsed());
            fresh.push(audit.fresh);
            workloads = audit.workloads;
            if let Some(d) = audit.differences.first() {
                return Err(BenchError::Check(format!(
                    "S11: the audit found {} difference(s) on a settled fleet; first: {d}",
                    audit.differences.len()
                )));
            }
        }
        let audit = Figure::ms(Scenario::S11, format!("self-audit of {workloads} workloads (0 differences)"), &walls);
        let pass = Figure::ms(Scenario::S11, "  a no-change pass of the same reconciler, same run", &passes);
        let ratio =
            Figure::new(Scenario::S11, "  audit ÷ no-change pass", "×", vec![audit.value / pass.value.max(1e-9)]);
        sink.put(audit);
        sink.put(Figure::ms(Scenario::S11, "  fresh side: cold load, cold preview (a dry run of the store)", &fresh));
        sink.put(pass);
        sink.put(ratio);
        Ok(())
    }
}
