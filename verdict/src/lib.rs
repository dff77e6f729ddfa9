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
//!
//! Design constraints: pure analysis over a [`StrataResult`]; no ptrace, no network, no
//! terminal. What the samples do not show is reported as not seen, never guessed: a rank
//! sampled once has no motion, a rank some samples could not read is "partly seen".
//!
//! The verdict reaches the renderings through
//! [`Annotation`]: `result.json` carries its
//! `verdict` object (`docs/FORMATS.md`).

pub mod mpi_call;
pub mod observe;

use observe::{Observations, StateFile};
use strata_filters::{PrefixTree, RankSet};
use strata_result::StrataResult;
use strata_result::annotation::{Annotation, Label};

/// The verdict on one result.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// What every rank was doing.
    pub observations: Observations,
}

impl Verdict {
    /// The verdict on `result`.
    pub fn of(result: &StrataResult) -> Verdict {
        Verdict {
            observations: observe::observe(result),
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
        serde_json::json!({
            "samples": self.observations.samples,
            "states": states,
        })
    }
}

impl Annotation for Verdict {
    fn node_labels(&self, _tree: &PrefixTree<RankSet>) -> Option<Vec<Option<Label>>> {
        None
    }

    fn report_text(&self, _max_list: usize) -> String {
        String::new()
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
