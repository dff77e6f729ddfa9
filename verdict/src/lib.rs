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
//! * [`text`]: the answer as the "Why it hangs" paragraph after the text tree.
//! * [`decide`]: one answer from those states: its kind, the ranks to debug and where they
//!   are, the evidence, how sure, and for an undecided answer what would decide it.
//!
//! Design constraints: pure analysis over a [`StrataResult`]; no ptrace, no network, no
//! terminal. What the samples do not show is reported as not seen, never guessed: a rank
//! sampled once has no motion, a rank some samples could not read is "partly seen".
//!
//! The verdict reaches the renderings through
//! [`Annotation`]: `result.json` carries its
//! `verdict` object (`docs/FORMATS.md`).

pub mod decide;
pub mod mpi_call;
pub mod observe;
pub mod text;

use observe::{Observations, StateFile};
use strata_filters::{PrefixTree, RankSet};
use strata_result::StrataResult;
use strata_result::annotation::{Annotation, Label};

/// The verdict on one result.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// What every rank was doing.
    pub observations: Observations,
    /// The answer drawn from it.
    pub decision: decide::Decision,
}

impl Verdict {
    /// The verdict on `result`.
    pub fn of(result: &StrataResult) -> Verdict {
        let observations = observe::observe(result);
        let decision = decide::decide(&observations);
        Verdict {
            observations,
            decision,
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
        object
    }
}

impl Annotation for Verdict {
    fn node_labels(&self, _tree: &PrefixTree<RankSet>) -> Option<Vec<Option<Label>>> {
        None
    }

    fn report_text(&self, max_list: usize) -> String {
        text::text(&self.observations, &self.decision, max_list)
    }

    fn files(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    fn result_fields(&self) -> Vec<(&'static str, serde_json::Value)> {
        vec![("verdict", self.to_json())]
    }
}

#[cfg(test)]
pub(crate) mod testing;
