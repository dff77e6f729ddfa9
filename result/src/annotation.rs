//! What an analysis draws over a rendering of the result. The progress order labels each
//! node with its place (`get_norm@[T1.2]`), orders sibling branches least progressed first,
//! adds a section after the classes and its own files to the result directory; the verdict
//! adds its object to `result.json`. The renderers know only this interface, so analyses
//! depend on the result, never the reverse. Several analyses are drawn at once through
//! [`Annotations`].

use std::fmt;
use strata_filters::{PrefixTree, RankSet};

/// An analysis of a result that its renderings show.
pub trait Annotation {
    /// The label of each node of `tree` (any view of the annotated result), indexed by node
    /// id; `None` where the analysis says nothing. Siblings are drawn in label order,
    /// unlabelled ones last. `None` as a whole: the analysis labels no node.
    fn node_labels(&self, tree: &PrefixTree<RankSet>) -> Option<Vec<Option<Label>>>;
    /// The section printed after the equivalence classes, rank lists shortened to
    /// `max_list` characters; empty for none.
    fn report_text(&self, max_list: usize) -> String;
    /// The analysis's own files in a result directory: (file name, contents).
    fn files(&self) -> Vec<(&'static str, String)>;
    /// Top-level fields the analysis adds to `result.json` (and to `--json` output):
    /// (key, value). Keys must not be the file's own (`format`, `trees`, ...).
    fn result_fields(&self) -> Vec<(&'static str, serde_json::Value)> {
        Vec::new()
    }
}

/// Several analyses drawn as one: the first that labels nodes labels them, the reports
/// follow each other in order, and the files and `result.json` fields are all kept.
pub struct Annotations<'a>(pub Vec<&'a dyn Annotation>);

impl fmt::Debug for Annotations<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Annotations({} analyses)", self.0.len())
    }
}

impl Annotation for Annotations<'_> {
    fn node_labels(&self, tree: &PrefixTree<RankSet>) -> Option<Vec<Option<Label>>> {
        self.0.iter().find_map(|a| a.node_labels(tree))
    }

    fn report_text(&self, max_list: usize) -> String {
        let reports: Vec<String> = self
            .0
            .iter()
            .map(|a| a.report_text(max_list))
            .filter(|r| !r.is_empty())
            .collect();
        reports.join("\n")
    }

    fn files(&self) -> Vec<(&'static str, String)> {
        self.0.iter().flat_map(|a| a.files()).collect()
    }

    fn result_fields(&self) -> Vec<(&'static str, serde_json::Value)> {
        self.0.iter().flat_map(|a| a.result_fields()).collect()
    }
}

/// One component of a label: the level at one branching point (1 = least progressed
/// there) and, when several groups share a level, which of them (1 = `a`, 2 = `b`, ...;
/// 0 when the group is alone at its level).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag {
    pub level: u32,
    pub tie: u32,
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.level)?;
        match self.tie {
            0 => Ok(()),
            t @ 1..=26 => write!(f, "{}", (b'a' + (t - 1) as u8) as char),
            t => write!(f, "_{t}"),
        }
    }
}

/// A task's place in the progress order: one tag per branching point on its path, outermost
/// first. Labels sort least progressed first (`T1 < T1.2 < T2 < T2a < T2b`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label(pub Vec<Tag>);

impl Label {
    /// The longest label both start with.
    pub fn common_prefix(&self, other: &Label) -> Label {
        Label(
            self.0
                .iter()
                .zip(&other.0)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| *a)
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// This label, one branching point deeper.
    pub fn child(&self, tag: Tag) -> Label {
        let mut l = self.0.clone();
        l.push(tag);
        Label(l)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("T")?;
        for (i, t) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}
