//! Views: coarser trees derived from a sampled tree without sampling again.
//!
//! A view maps every frame to a coarser frame (the granularity) and optionally drops what
//! lies below the first MPI entry of each path (spin-polling ranks show different library
//! frames in every sample, which would split one "waiting in MPI_Barrier" class into many).
//! Siblings whose coarse frames coincide are merged. Because a view acts on each path
//! independently, it commutes with merging: `view(merge(a, b)) == merge(view(a), view(b))`.

use crate::frame::{CodeFrame, Frame, FrameId};
use crate::taskset::TaskSet;
use crate::tree::{NodeId, PrefixTree};
use rustc_hash::FxHashMap;
use std::fmt;
use std::str::FromStr;

/// What identifies a frame in a view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Granularity {
    /// Function name and module (STAT's default).
    #[default]
    Function,
    /// Function plus source file and line.
    Line,
    /// Module and offset: the exact code address, symbolized or not.
    Module,
}

impl Granularity {
    pub const ALL: [Granularity; 3] = [
        Granularity::Function,
        Granularity::Line,
        Granularity::Module,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::Function => "function",
            Granularity::Line => "line",
            Granularity::Module => "module",
        }
    }

    /// The coarse frame that stands for `frame` in this granularity.
    pub fn project(self, frame: &Frame) -> Frame {
        let c = match frame {
            Frame::Special(_) => return frame.clone(),
            Frame::Code(c) => c,
        };
        match self {
            // Without a symbol the address is all we know: keep it, or every unknown
            // frame of a module would fold into one.
            Granularity::Function if c.function.is_none() => Frame::Code(CodeFrame {
                file: None,
                line: None,
                ..c.clone()
            }),
            Granularity::Function => Frame::Code(CodeFrame {
                function: c.function.clone(),
                module: c.module.clone(),
                inlined: c.inlined,
                ..CodeFrame::default()
            }),
            Granularity::Line if c.line.is_none() => Granularity::Function.project(frame),
            Granularity::Line => Frame::Code(CodeFrame {
                offset: None,
                ..c.clone()
            }),
            Granularity::Module => Frame::Code(CodeFrame {
                function: None,
                file: None,
                line: None,
                ..c.clone()
            }),
        }
    }
}

impl fmt::Display for Granularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Granularity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Granularity::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| format!("unknown granularity '{s}' (expected function, line or module)"))
    }
}

/// How to look at a tree. The default is what `strata attach` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ViewOptions {
    pub granularity: Granularity,
    /// Drop the frames below the first MPI entry of each path.
    pub cut_below_mpi: bool,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            granularity: Granularity::Function,
            cut_below_mpi: true,
        }
    }
}

/// Derives the view `opts` of `tree` (see the module docs).
pub fn view<S: TaskSet>(tree: &PrefixTree<S>, opts: ViewOptions) -> PrefixTree<S> {
    view_with_cut(tree, opts, |_| false)
}

/// Like [`view`], also cutting below every frame for which `cut_below` holds (a user's
/// pattern, such as the pthread layer): the frame stays, what lies under it goes, as for
/// an MPI entry. `cut_below` sees the sampled frame, not its projection, so a pattern on
/// function names works in every granularity.
pub fn view_with_cut<S: TaskSet>(
    tree: &PrefixTree<S>,
    opts: ViewOptions,
    cut_below: impl Fn(&Frame) -> bool,
) -> PrefixTree<S> {
    let mut out: PrefixTree<S> = PrefixTree::new(tree.task_space(), tree.thread_space());
    let mut frame_map: FxHashMap<FrameId, FrameId> = FxHashMap::default();
    // Image of each source node in `out`; None when the node lies below a cut.
    let mut image: Vec<Option<NodeId>> = Vec::with_capacity(tree.len());
    // Whether the children of the source node are cut away.
    let mut cuts_below: Vec<bool> = Vec::with_capacity(tree.len());
    for id in tree.node_ids() {
        let n = tree.node(id);
        let (dst, cut) = match (n.parent, n.frame) {
            (None, _) | (_, None) => (Some(NodeId::ROOT), false),
            (Some(p), Some(f)) => {
                if cuts_below[p.index()] || image[p.index()].is_none() {
                    (None, true)
                } else {
                    let nf = *frame_map.entry(f).or_insert_with(|| {
                        let projected = opts.granularity.project(tree.frame(f));
                        out.intern(&projected)
                    });
                    let dst = out.child_or_insert(image[p.index()].expect("checked"), nf);
                    let frame = tree.frame(f);
                    (
                        Some(dst),
                        (opts.cut_below_mpi && frame.is_mpi_entry()) || cut_below(frame),
                    )
                }
            }
        };
        if let Some(d) = dst {
            let node = out.node_mut(d);
            node.tasks.union_with(&n.tasks);
            node.threads.union_with(&n.threads);
        }
        image.push(dst);
        cuts_below.push(cut);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taskset::TaskRuns;

    fn p(names: &[&str]) -> Vec<Frame> {
        names.iter().map(|n| Frame::function(n)).collect()
    }

    #[test]
    fn a_user_cut_keeps_the_frame_and_drops_what_is_below() {
        let mut t: PrefixTree<TaskRuns> = PrefixTree::new(3, 0);
        t.add_trace(&p(&["main", "pthread_join", "__futex_wait"]), 0, None);
        t.add_trace(&p(&["main", "pthread_join", "__lll_lock"]), 1, None);
        t.add_trace(&p(&["main", "work"]), 2, None);
        let opts = ViewOptions::default();
        let cut = view_with_cut(&t, opts, |f| f.name().starts_with("pthread_"));
        let paths: Vec<Vec<String>> = cut
            .canonical()
            .keys()
            .map(|k| k.iter().map(Frame::name).collect())
            .collect();
        assert_eq!(
            paths,
            vec![
                vec![],
                vec!["main".to_string()],
                vec!["main".to_string(), "pthread_join".to_string()],
                vec!["main".to_string(), "work".to_string()],
            ]
        );
        // The ranks below the cut end at the cut frame.
        let join = cut.node_ids().find(|&n| {
            cut.depth(n) == 2 && { cut.node_frame(n).unwrap().name() == "pthread_join" }
        });
        assert_eq!(cut.tasks_ending_at(join.unwrap()), TaskRuns::range(0, 2));
        // Without a matching frame it is the plain view.
        assert_eq!(
            view_with_cut(&t, opts, |_| false).canonical(),
            view(&t, opts).canonical()
        );
    }
}
