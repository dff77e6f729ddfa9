//! Variables read across ranks (`--var FUNCTION:VARIABLE`, and the loop-order variables of
//! the progress order): what each rank reported, merged into classes (value -> ranks), the
//! way the prefix tree merges stacks.
//!
//! The daemons read a variable in the innermost frame of the named function of each rank's
//! main thread, with the rank stopped for the read (`ReadVariables` in the protocol); the
//! values come back per rank and are merged here, at the front end. They are kept in
//! `result.json` (`variables`) so that a saved result can be ordered again later.

use crate::render::label::count_label;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use strata_filters::RankSet;
use strata_filters::taskset::{format_set, parse_ranges, rankset_from_runs};
use strata_proto::overlay::{VariableRequest, VariableValue, VariablesReply};

/// `FUNCTION:VARIABLE` from the command line (`solve:it`, `Solver::step:n`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VariableSpec {
    pub function: String,
    pub variable: String,
}

impl std::str::FromStr for VariableSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "'{s}' is not FUNCTION:VARIABLE (for example solve:it, or Solver::step:n for C++)"
            )
        };
        let (function, variable) = s.rsplit_once(':').ok_or_else(bad)?;
        if function.is_empty() || variable.is_empty() || function.ends_with(':') {
            return Err(bad());
        }
        Ok(VariableSpec {
            function: function.to_string(),
            variable: variable.to_string(),
        })
    }
}

impl fmt::Display for VariableSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.function, self.variable)
    }
}

impl VariableSpec {
    pub fn request(&self) -> VariableRequest {
        VariableRequest {
            function: self.function.clone(),
            variable: self.variable.clone(),
        }
    }
}

/// What one rank said about one variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// Integers first (they order), by value.
    Integer(i64),
    /// Any other value, as text (floating point, pointers).
    Value(String),
    /// The variable has no location at the frame's pc.
    OptimizedOut,
    /// Why there is no value.
    Error(String),
}

impl fmt::Display for Reading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reading::Integer(v) => write!(f, "{v}"),
            Reading::Value(t) => f.write_str(t),
            Reading::OptimizedOut => f.write_str("<optimized out>"),
            Reading::Error(e) => write!(f, "<{e}>"),
        }
    }
}

impl Reading {
    fn of(v: &VariableValue) -> Reading {
        // Optimized out first: the daemon also says so in `error`, in words.
        if v.optimized_out {
            return Reading::OptimizedOut;
        }
        if let Some(e) = &v.error {
            return Reading::Error(e.clone());
        }
        match (v.integer, &v.text) {
            (Some(i), _) => Reading::Integer(i),
            (None, Some(t)) => Reading::Value(t.clone()),
            (None, None) => Reading::Error("the daemon sent no value".into()),
        }
    }
}

/// Ranks that said the same thing, and where (the frame the value was read in).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadClass {
    pub reading: Reading,
    /// Compact rank list (`0-2,4-7`).
    pub ranks: String,
    /// `function @ file:line` of the frame read, when the daemon said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// One variable across the job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariableReads {
    pub function: String,
    pub variable: String,
    /// Read for the verdict (a call's peer or communicator), not asked for: kept for it,
    /// not listed in the report.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub for_verdict: bool,
    /// Integers in increasing order first, then other values, optimized out, errors.
    pub classes: Vec<ReadClass>,
}

impl VariableReads {
    /// The value each rank had, for ordering: integers only.
    pub fn integers(&self) -> BTreeMap<u32, i64> {
        let mut out = BTreeMap::new();
        for c in &self.classes {
            if let Reading::Integer(v) = c.reading
                && let Ok(runs) = parse_ranges(&c.ranks)
            {
                for r in rankset_from_runs(&runs).iter() {
                    out.insert(r, v);
                }
            }
        }
        out
    }

    /// The classes' ranks as sets.
    pub fn class_ranks(&self, class: &ReadClass) -> RankSet {
        parse_ranges(&class.ranks)
            .map(|runs| rankset_from_runs(&runs))
            .unwrap_or_default()
    }
}

/// Merges a reply into one [`VariableReads`] per request. `expected`: the ranks that should
/// have answered (the sampled ones); those absent from the reply are reported as such.
pub fn from_reply(
    requests: &[VariableRequest],
    reply: &VariablesReply,
    expected: &RankSet,
) -> Vec<VariableReads> {
    let mut out = Vec::new();
    for (i, req) in requests.iter().enumerate() {
        let mut classes: BTreeMap<(Reading, Option<String>), RankSet> = BTreeMap::new();
        let mut answered = RankSet::new();
        for r in &reply.ranks {
            answered.insert(r.rank);
            let (reading, at) = match (&r.error, r.values.get(i)) {
                (Some(e), _) => (Reading::Error(e.clone()), None),
                (None, None) => (
                    Reading::Error("no value in the daemon's reply".into()),
                    None,
                ),
                (None, Some(v)) => (Reading::of(v), place(v)),
            };
            classes.entry((reading, at)).or_default().insert(r.rank);
        }
        let silent = expected - &answered;
        if !silent.is_empty() {
            classes.insert(
                (Reading::Error("its daemon did not answer".into()), None),
                silent,
            );
        }
        out.push(VariableReads {
            function: req.function.clone(),
            variable: req.variable.clone(),
            for_verdict: false,
            classes: classes
                .into_iter()
                .map(|((reading, at), ranks)| ReadClass {
                    reading,
                    ranks: format_set(&ranks),
                    at,
                })
                .collect(),
        });
    }
    out
}

fn place(v: &VariableValue) -> Option<String> {
    let f = v.function.as_deref()?;
    Some(match &v.file {
        Some(file) if v.line > 0 => {
            let base = file.rsplit('/').next().unwrap_or(file);
            format!("{f} @ {base}:{}", v.line)
        }
        _ => f.to_string(),
    })
}

/// The text `--var` prints: per variable, its values and the ranks that had each.
pub fn text(reads: &[VariableReads], max_list: usize) -> String {
    let mut out = String::from("Variables (each rank stopped once to read them):\n");
    for v in reads {
        out.push_str(&format!("  {}:{}\n", v.function, v.variable));
        let rows: Vec<(String, String, String)> = v
            .classes
            .iter()
            .map(|c| {
                let ranks = parse_ranges(&c.ranks)
                    .map(|runs| rankset_from_runs(&runs))
                    .unwrap_or_default();
                (
                    c.reading.to_string(),
                    count_label(&ranks, max_list),
                    c.at.clone().unwrap_or_default(),
                )
            })
            .collect();
        let w0 = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
        let w1 = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
        for (value, ranks, at) in rows {
            let line = format!(
                "    {value}{}  {ranks}{}  {at}",
                " ".repeat(w0 - value.chars().count()),
                " ".repeat(w1 - ranks.chars().count())
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_proto::overlay::RankVariables;

    fn value(integer: Option<i64>, text: &str) -> VariableValue {
        VariableValue {
            text: Some(text.into()),
            integer,
            function: Some("solve".into()),
            file: Some("/src/solver.c".into()),
            line: 12,
            ..VariableValue::default()
        }
    }

    #[test]
    fn specs_parse_c_and_cpp_names_and_refuse_the_rest() {
        let s: VariableSpec = "solve:it".parse().unwrap();
        assert_eq!((s.function.as_str(), s.variable.as_str()), ("solve", "it"));
        let s: VariableSpec = "ns::Solver::step:n".parse().unwrap();
        assert_eq!(
            (s.function.as_str(), s.variable.as_str()),
            ("ns::Solver::step", "n")
        );
        for bad in ["solve", "solve:", ":it", "ns::f", ""] {
            assert!(bad.parse::<VariableSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn replies_merge_into_value_classes_and_name_the_silent_ranks() {
        let req = vec![VariableRequest {
            function: "solve".into(),
            variable: "it".into(),
        }];
        let rank = |r: u32, v: VariableValue| RankVariables {
            rank: r,
            values: vec![v],
            error: None,
        };
        let reply = VariablesReply {
            ranks: vec![
                rank(0, value(Some(4), "4")),
                rank(1, value(Some(4), "4")),
                rank(3, value(Some(3), "3")),
                rank(
                    4,
                    VariableValue {
                        optimized_out: true,
                        ..VariableValue::default()
                    },
                ),
                RankVariables {
                    rank: 5,
                    values: vec![],
                    error: Some("rank exited".into()),
                },
            ],
        };
        let expected: RankSet = (0..7).collect();
        let reads = from_reply(&req, &reply, &expected);
        assert_eq!(reads.len(), 1);
        let c: Vec<(String, &str)> = reads[0]
            .classes
            .iter()
            .map(|c| (c.reading.to_string(), c.ranks.as_str()))
            .collect();
        assert_eq!(
            c,
            vec![
                ("3".to_string(), "3"),
                ("4".to_string(), "0-1"),
                ("<optimized out>".to_string(), "4"),
                ("<its daemon did not answer>".to_string(), "2,6"),
                ("<rank exited>".to_string(), "5"),
            ]
        );
        assert_eq!(
            reads[0].classes[0].at.as_deref(),
            Some("solve @ solver.c:12")
        );
        let ints = reads[0].integers();
        assert_eq!(ints.get(&3), Some(&3));
        assert_eq!(ints.get(&1), Some(&4));
        assert_eq!(ints.get(&4), None);
        let t = text(&reads, 100);
        assert!(t.contains("  solve:it\n    3 "), "{t}");
        // Saved and read back unchanged.
        let json = serde_json::to_string(&reads).unwrap();
        let back: Vec<VariableReads> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, reads);
    }
}
