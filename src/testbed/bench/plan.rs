//! S9: `fedsched plan` of a one-file edit, both ways the command runs. Through the running
//! daemon (the mark): the command reads the repository and encodes it as the request, the
//! daemon decodes it and plans on its warm reconciler ([`on_reconciler`]: its parse cache, its
//! live members, a warm preview, the document). In process (`--local`, no daemon): a private
//! copy of the store, a cold load of the repository by its reconciler (through the parse
//! cache the copy holds, with the fleet's member data, as `plan --live` has them), the preview
//! of the pass ([`Reconciler::preview`]) and the plan document. Each run edits another template
//! (its replicas) and puts it back afterwards; the plan must report it.

use std::time::Instant;

use super::{Bench, BenchError, Figure, Scenario, Sink, count, io, with_live};
use crate::policy::load::read_repository;
use crate::reconcile::{PhaseTimings, Reconciler, Settings};
use crate::store::Store;
use crate::views::plan::{Before, PlanRequest, document, on_reconciler};

impl Bench {
    /// S9: the wall time of a plan of a one-template edit, and its parts.
    pub(super) fn s9_plan(&mut self, rec: &Reconciler, sink: &mut Sink<'_>) -> Result<(), BenchError> {
        rec.store.flush()?;
        let fix = &self.fix;
        let w = fix.spec.workloads.max(1);
        let (mut walls, mut copies, mut loads, mut previews, mut changed, mut decided) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for k in 0..self.runs {
            let i = (k * 7919 + 13) % w;
            self.edit_workload(i)?;
            let fix = &self.fix;
            let started = Instant::now();
            let scratch = tempfile::tempdir().map_err(io("create a temporary directory"))?;
            let store = Store::open_copy(&self.state, &scratch.path().join("state"))?;
            copies.push(started.elapsed());
            let phase = Instant::now();
            // As the command loads: by the copy's reconciler, through the copy's parse cache.
            let planner = Reconciler::new(store, Settings::builtin());
            let mut inputs = planner
                .load_inputs(&fix.repo, &mut PhaseTimings::default(), &crate::reconcile::Changed::Unknown)
                .map_err(|errors| {
                    let shown: Vec<String> = errors.iter().take(5).map(ToString::to_string).collect();
                    BenchError::Invalid(format!("{} error(s): {}", errors.len(), shown.join("; ")))
                })?;
            with_live(fix, &mut inputs, &planner.store, &mut PhaseTimings::default(), self.now);
            loads.push(phase.elapsed());
            let phase = Instant::now();
            let preview = planner.preview(&inputs, &self.out, self.now)?;
            previews.push(phase.elapsed());
            let doc = document(&preview, &Before::Published, &inputs.set, &self.out, false);
            walls.push(started.elapsed());
            let files = doc["summary"]["filesChanged"].as_u64().unwrap_or(0);
            if doc["changes"] != true || files == 0 {
                return Err(BenchError::Check(format!("S9: the plan of an edit of workload {i} shows no change")));
            }
            changed.push(doc["summary"]["changed"].as_f64().unwrap_or(0.0));
            decided.push(files as f64);
            self.restore_workload(i)?;
        }
        self.edits_restored()?;
        sink.put(Figure::ms(
            Scenario::S9,
            "plan in process, no daemon (--local: copy store → load → preview → document)",
            &walls,
        ));
        sink.put(Figure::ms(Scenario::S9, "  copy of the store", &copies));
        sink.put(Figure::ms(Scenario::S9, "  load (cold) + member data", &loads));
        sink.put(Figure::ms(Scenario::S9, "  preview (the pass's stages, publish diff)", &previews));
        sink.put(count(Scenario::S9, "  workloads changed in the plan", changed));
        sink.put(count(Scenario::S9, "  files changed in the plan", decided));
        self.s9_plan_on_daemon(rec, sink)
    }

    /// S9 as `fedsched plan` runs while the daemon runs (`rec`, warm from the passes before):
    /// the command reads the repository and sends it as JSON, the daemon decodes it and plans
    /// on its warm cache ([`on_reconciler`]: parse cache overlay, live members, warm preview,
    /// document). Each run edits another template and puts it back.
    fn s9_plan_on_daemon(&mut self, rec: &Reconciler, sink: &mut Sink<'_>) -> Result<(), BenchError> {
        let fix = &self.fix;
        let w = fix.spec.workloads.max(1);
        let settings = Settings::builtin();
        let (mut walls, mut reads, mut plans, mut changed, mut files_changed) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for k in 0..self.runs {
            let i = (k * 6007 + 29) % w;
            self.edit_workload(i)?;
            let fix = &self.fix;
            let started = Instant::now();
            // The command: read the repository, encode the request.
            let (files, errors) = read_repository(&fix.repo, &settings.walk);
            if let Some(e) = errors.first() {
                return Err(BenchError::Invalid(format!("{} read error(s): {e}", errors.len())));
            }
            let body = serde_json::to_vec(&PlanRequest { after: files, base: None, diff: false })
                .map_err(|e| BenchError::Invalid(format!("encode the plan request: {e}")))?;
            reads.push(started.elapsed());
            // The daemon: decode, plan.
            let phase = Instant::now();
            let request: PlanRequest = serde_json::from_slice(&body)
                .map_err(|e| BenchError::Invalid(format!("decode the plan request: {e}")))?;
            let doc = {
                let mut live = fix.live.borrow_mut();
                for status in live.clusters.values_mut() {
                    if let Some(data) = status.last_good.as_mut() {
                        std::sync::Arc::make_mut(data).poll.at_ms = self.now;
                    }
                }
                on_reconciler(rec, &live, &self.out, request, self.now)
                    .map_err(|e| BenchError::Invalid(format!("S9 through the daemon: {e}")))?
            };
            plans.push(phase.elapsed());
            walls.push(started.elapsed());
            let files = doc["summary"]["filesChanged"].as_u64().unwrap_or(0);
            if doc["changes"] != true || files == 0 {
                return Err(BenchError::Check(format!(
                    "S9: the daemon's plan of an edit of workload {i} shows no change"
                )));
            }
            changed.push(doc["summary"]["changed"].as_f64().unwrap_or(0.0));
            files_changed.push(files as f64);
            self.restore_workload(i)?;
        }
        self.edits_restored()?;
        let f = Figure::ms(
            Scenario::S9,
            "plan of a one-template edit through the running daemon (read + send → plan)",
            &walls,
        );
        let m = super::Mark::at_size("≤ 2 s", f.value, 2_000.0, self.size());
        sink.put(f.mark(m));
        sink.put(Figure::ms(Scenario::S9, "  the command: read the repository, encode the request", &reads));
        sink.put(Figure::ms(
            Scenario::S9,
            "  the daemon: decode, load through its parse cache, warm preview, document",
            &plans,
        ));
        sink.put(count(Scenario::S9, "  workloads changed in the daemon's plan", changed));
        sink.put(count(Scenario::S9, "  files changed in the daemon's plan", files_changed));
        Ok(())
    }
}
