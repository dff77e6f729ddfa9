//! Loop-order variables in the progress order (STAT's temporal order, section 4.2): which
//! loops the order needs iteration counts of, which variable stands for each loop's count
//! (the static analysis of [`super::lov`]), and what every rank's value was (read by the
//! daemons, kept in the result as [`strata_result::variables::VariableReads`]).
//!
//! A loop is found through the program points of the frames in the tree: every
//! `Iteration` step of a frame's point is a loop that encloses the frame's line. Its
//! variable is read in that frame's function (the frame's name in the debug info), so the
//! read lands in the right activation even when the function is inlined or recursive.

use super::lov::{Candidate, Direction};
use super::point::{ProgramPoint, Step};
use std::collections::BTreeMap;
use strata_proto::overlay::VariableRequest;
use strata_result::variables::VariableReads;

/// A loop of the program, by where it starts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LoopKey {
    pub file: String,
    pub line: u32,
}

/// One loop the order may need, its loop-order variable and the values read.
#[derive(Clone, Debug)]
pub struct LoopCounter {
    pub key: LoopKey,
    pub kind: &'static str,
    /// The function (as the debug info names it) whose frame holds the variable.
    pub function: String,
    /// The chosen loop-order variable, or why there is none.
    pub lov: Result<Candidate, String>,
    /// Each rank's value, for the ranks whose read gave an integer.
    pub values: BTreeMap<u32, i64>,
    /// Why some ranks have no value (optimized out, no frame, ...), one line each.
    pub unread: Vec<String>,
    /// The variable was not read at all (a saved result without it, or `--progress` on a
    /// result taken without reading).
    pub not_read: bool,
    /// The most ranks at one frame inside the loop: with fewer than two, nothing can be
    /// ordered by its count.
    pub ranks_inside: u64,
}

impl LoopCounter {
    pub fn direction(&self) -> Option<Direction> {
        self.lov.as_ref().ok().map(|c| c.direction)
    }

    pub fn variable(&self) -> Option<&str> {
        self.lov.as_ref().ok().map(|c| c.variable.as_str())
    }

    /// The read this loop needs, when it has a variable.
    pub fn request(&self) -> Option<VariableRequest> {
        Some(VariableRequest {
            function: self.function.clone(),
            variable: self.variable()?.to_string(),
        })
    }

    /// Why the ranks of this loop cannot be ordered by it, when they cannot: one line.
    pub fn missing(&self) -> Option<String> {
        match &self.lov {
            Err(why) => Some(format!(
                "no loop-order variable for the {} loop at {}:{}: {why}",
                self.kind,
                short(&self.key.file),
                self.key.line
            )),
            Ok(c) if self.not_read => Some(format!(
                "{}:{} (the loop-order variable of the {} loop at {}:{}) was not read: attach with --progress to read it",
                self.function,
                c.variable,
                self.kind,
                short(&self.key.file),
                self.key.line
            )),
            Ok(_) => None,
        }
    }
}

fn short(f: &str) -> &str {
    f.rsplit('/').next().unwrap_or(f)
}

/// Every loop met in the tree's frames.
#[derive(Clone, Debug, Default)]
pub struct Loops {
    pub counters: BTreeMap<LoopKey, LoopCounter>,
}

/// The loops a point lies in, outer first: `(line, kind)` of each `Iteration` step.
pub fn loops_of(point: &ProgramPoint) -> Vec<(u32, &'static str)> {
    point
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Iteration { line, kind } => Some((*line, *kind)),
            _ => None,
        })
        .collect()
}

impl Loops {
    /// Adds the loops of `point` (a frame of `function`), looking up their variables with
    /// `lov` (called once per loop).
    pub fn add(
        &mut self,
        point: &ProgramPoint,
        function: &str,
        ranks: u64,
        mut lov: impl FnMut(&str, u32) -> Result<Option<Candidate>, String>,
    ) {
        for (line, kind) in loops_of(point) {
            let key = LoopKey {
                file: point.file.clone(),
                line,
            };
            if let Some(c) = self.counters.get_mut(&key) {
                c.ranks_inside = c.ranks_inside.max(ranks);
                continue;
            }
            let chosen = match lov(&point.file, line) {
                Ok(Some(c)) => Ok(c),
                Ok(None) => Err("none of its variables is a monotonic integer counter".into()),
                Err(e) => Err(e),
            };
            self.counters.insert(
                key.clone(),
                LoopCounter {
                    key,
                    kind,
                    function: function.to_string(),
                    lov: chosen,
                    values: BTreeMap::new(),
                    unread: Vec::new(),
                    not_read: true,
                    ranks_inside: ranks,
                },
            );
        }
    }

    /// Fills in the values `reads` hold for the loops' variables.
    pub fn fill(&mut self, reads: &[VariableReads]) {
        for c in self.counters.values_mut() {
            let Some(var) = c.variable().map(str::to_string) else {
                continue;
            };
            let Some(r) = reads
                .iter()
                .find(|r| r.function == c.function && r.variable == var)
            else {
                continue;
            };
            c.not_read = false;
            c.values = r.integers();
            c.unread = r
                .classes
                .iter()
                .filter(|k| !matches!(k.reading, strata_result::variables::Reading::Integer(_)))
                .map(|k| {
                    format!(
                        "{}:{} = {} for ranks [{}]",
                        c.function, var, k.reading, k.ranks
                    )
                })
                .collect();
        }
    }

    /// The reads the loops need, once each.
    pub fn requests(&self) -> Vec<VariableRequest> {
        let mut out: Vec<VariableRequest> = Vec::new();
        for r in self.counters.values().filter_map(LoopCounter::request) {
            if !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }

    pub fn get(&self, file: &str, line: u32) -> Option<&LoopCounter> {
        self.counters.get(&LoopKey {
            file: file.to_string(),
            line,
        })
    }

    /// `rank`'s iteration values for the loops `point` lies in, outer first (`None` where
    /// a value is unknown).
    pub fn tuple(&self, point: &ProgramPoint, rank: u32) -> Vec<Option<i64>> {
        loops_of(point)
            .into_iter()
            .map(|(line, _)| {
                self.get(&point.file, line)
                    .and_then(|c| c.values.get(&rank).copied())
            })
            .collect()
    }
}
