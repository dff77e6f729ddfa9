//! The verdict: which ranks hold a hung job up, and why.
//!
//! STAT's prefix tree says *where* every rank is; a user came with the question *why the
//! job hangs and which ranks to debug*. This crate answers it from what strata already
//! samples, at the root, after the remap:
//!
//! * [`mpi_call`]: which MPI call a stack is in (its kind: collective, point-to-point,
//!   completion, one-sided, init/finalize) and where the program called it. The only
//!   module that reads MPI out of frames.
//! * [`observe`]: every rank's state at its last sample (in which MPI call, or where in
//!   the program outside MPI, in a signal handler, exited) and whether its path moved
//!   between samples (ParaStack's rule).
//! * [`arguments`]: whom each blocked call waits for (its source, destination or root) and
//!   on which communicator. [`from_source`] fills it best effort, from the call's source
//!   line and the calling frame's variables (read by the daemons after sampling), with
//!   [`signature`] saying which argument is which; [`from_library`] replaces a rank's with
//!   the exact record of strata's PMPI library where the rank has one.
//! * [`graph`]: the wait-for graph over ranks (AND/OR, as in MUST), the ranks it proves
//!   stuck and their cycles.
//! * [`decide`]: one answer from those states and that graph: its kind, the ranks to debug
//!   and where they are, the evidence, how sure, and for an undecided answer what would
//!   decide it ([`answer`] holds its types).
//! * [`text`]: the answer as the "Why it hangs" paragraph after the text tree.
//!
//! Design constraints: pure analysis over a [`StrataResult`] and the job's source files,
//! which it only reads; no ptrace, no network, no terminal. What the samples do not show is
//! reported as not seen, never guessed: a rank sampled once has no motion, a rank some
//! samples could not read is "partly seen", an argument not read is "unknown".
//!
//! The verdict reaches the renderings through [`Annotation`]: `result.json` carries its
//! `verdict` object (`docs/FORMATS.md`), the result directory its `wait_for.dot`.

pub mod answer;
pub mod arguments;
pub mod decide;
mod describe;
pub mod from_library;
pub mod from_source;
pub mod graph;
pub mod mpi_call;
pub mod observe;
mod proof;
mod prose;
mod role;
pub mod signature;
pub mod text;

use arguments::Arguments;
use decide::Kind;
use graph::WaitFor;
use observe::{Observations, StateFile};
use prose::rank_list;
use strata_filters::{PrefixTree, RankSet};
use strata_model::RuntimeModel;
use strata_progress::order::ProgressOrder;
use strata_progress::source::SourceIndex;
use strata_result::StrataResult;
use strata_result::annotation::{Annotation, Label};

/// The verdict on one result.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// What every rank was doing.
    pub observations: Observations,
    /// What their MPI calls were given, where it was read.
    pub arguments: Arguments,
    /// The answer drawn from it.
    pub decision: decide::Decision,
    /// The wait-for graph in DOT, when some call's arguments were known.
    pub wait_for_dot: Option<String>,
    /// Which ranks the PMPI library's exact records covered, when some rank had it.
    pub library: Option<from_library::Coverage>,
    /// The runtime model of the ranks' MPI histories, when two ranks or more had one.
    pub runtime: Option<RuntimeModel>,
}

impl Verdict {
    /// The verdict on `result`, the calls' arguments read from the sources `sources` finds
    /// and the variables read into the result. Where the wait-for graph decides nothing,
    /// the least progressed ranks answer (a guess): by the ranks' MPI histories when the
    /// runtime model has one class behind every other, else by the progress order
    /// (`progress` when the caller has it, else computed then).
    pub fn of(
        result: &StrataResult,
        sources: &mut SourceIndex,
        progress: Option<&ProgressOrder>,
    ) -> Verdict {
        let observations = observe::observe(result);
        let (arguments, library) = from_library::overlay(
            result,
            &observations,
            from_source::arguments(result, &observations, sources),
        );
        let runtime = RuntimeModel::of(result);
        let by_history = runtime.as_ref().and_then(RuntimeModel::behind_all);
        let mut behind = || {
            if let Some((ranks, label)) = &by_history {
                return Some(decide::Behind {
                    ranks: ranks.clone(),
                    label: label.clone(),
                    by: "by their MPI histories (the runtime model's progress dependence)".into(),
                });
            }
            match progress {
                Some(order) => behind(order),
                None => behind(&strata_progress::order::analyze(result, sources)),
            }
        };
        let mut verdict = Verdict::decided(observations, arguments, &mut behind);
        // Ranks that move are momentarily behind or ahead: who is least progressed says
        // something about a hang only.
        if let Some((ranks, label)) = &by_history
            && verdict.decision.kind != Kind::NoHangSeen
        {
            verdict
                .decision
                .evidence
                .push(agreement(&verdict.decision, ranks, label));
        }
        Verdict {
            library,
            runtime,
            ..verdict
        }
    }

    /// The "Why it hangs" paragraph, rank lists shortened to `max_list` characters.
    pub fn paragraph(&self, max_list: usize) -> String {
        let mut text = text::text(&self.observations, &self.decision, max_list);
        if let Some(coverage) = &self.library {
            text.push_str(&coverage.line(max_list));
        }
        if let Some(runtime) = &self.runtime {
            text.push_str(&runtime.text(max_list));
        }
        text
    }

    /// The variables to read in the ranks (after sampling, before the verdict) so that the
    /// arguments of the MPI calls in `result` can be evaluated.
    pub fn requests(
        result: &StrataResult,
        sources: &mut SourceIndex,
    ) -> Vec<strata_proto::overlay::VariableRequest> {
        from_source::requests(&observe::observe(result), sources)
    }

    /// The verdict on `observations` given `arguments` (from any producer).
    pub fn with_arguments(observations: Observations, arguments: Arguments) -> Verdict {
        Verdict::decided(observations, arguments, &mut || None)
    }

    fn decided(
        observations: Observations,
        arguments: Arguments,
        behind: &mut dyn FnMut() -> Option<decide::Behind>,
    ) -> Verdict {
        let (decision, wait_for_dot) = if arguments.is_empty() {
            (decide::decide_with(&observations, None, behind), None)
        } else {
            let graph = WaitFor::build(&observations, &arguments);
            (
                decide::decide_with(&observations, Some(&graph), behind),
                Some(graph.to_dot()),
            )
        };
        Verdict {
            observations,
            arguments,
            decision,
            wait_for_dot,
            library: None,
            runtime: None,
        }
    }

    /// The `verdict` object of `result.json`.
    pub fn to_json(&self) -> serde_json::Value {
        let states: Vec<StateFile> = self
            .observations
            .groups()
            .iter()
            .map(StateFile::of)
            .collect();
        let mut object = serde_json::to_value(&self.decision).expect("a decision serializes");
        let fields = object.as_object_mut().expect("a decision is an object");
        fields.insert("samples".to_string(), self.observations.samples.into());
        fields.insert(
            "states".to_string(),
            serde_json::to_value(states).expect("states serialize"),
        );
        if let Some(coverage) = &self.library {
            fields.insert("pmpi".to_string(), coverage.to_json());
        }
        object
    }
}

/// The progress order's one least progressed class, if it has one.
fn behind(order: &ProgressOrder) -> Option<decide::Behind> {
    let class = strata_progress::report::least_progressed_class(order).ok()?;
    Some(decide::Behind {
        ranks: class.tasks.clone(),
        label: class.label.to_string(),
        by: "by code order and loop counters".into(),
    })
}

/// What the MPI histories' least progressed ranks say of `decision`: that they agree with
/// it, or where they point instead (shown, not hidden: the answer stays the verdict's).
fn agreement(decision: &decide::Decision, ranks: &RankSet, label: &str) -> String {
    let named: RankSet = decision
        .culprits
        .iter()
        .map(|c| &c.set)
        .fold(RankSet::new(), |a, b| &a | b);
    let set = rank_list(ranks);
    if !named.is_empty() && ranks.is_subset(&named) {
        format!("their MPI histories agree: [{set}] made the least progress ({label})")
    } else {
        format!("their MPI histories put [{set}] least progressed ({label})")
    }
}

impl Annotation for Verdict {
    fn node_labels(&self, _tree: &PrefixTree<RankSet>) -> Option<Vec<Option<Label>>> {
        None
    }

    fn report_text(&self, max_list: usize) -> String {
        self.paragraph(max_list)
    }

    fn files(&self) -> Vec<(&'static str, String)> {
        self.wait_for_dot
            .iter()
            .map(|dot| ("wait_for.dot", dot.clone()))
            .collect()
    }

    fn result_fields(&self) -> Vec<(&'static str, serde_json::Value)> {
        let mut fields = vec![("verdict", self.to_json())];
        if let Some(runtime) = &self.runtime {
            fields.push(("runtime_model", runtime.to_json()));
        }
        fields
    }
}

#[cfg(test)]
pub(crate) mod testing;
