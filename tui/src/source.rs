//! Where the UI's result comes from: the seam between the terminal UI and a live session.
//!
//! The UI only ever holds a [`StrataResult`]; what it can do besides showing it (sample
//! again, read full stacks, detach) goes through [`Source`]. A saved result is [`Saved`];
//! `strata attach -i` implements the trait over its session. Calls block: the UI says what
//! it is waiting for before it calls, and no two calls are ever in flight.

use strata_filters::{Frame, NodeId, PrefixTree, RankSet};
use strata_result::StrataResult;
use strata_result::render::frame_text;
use strata_result::variables::{VariableReads, VariableSpec};

/// Where the UI's result comes from, and what it can do besides showing it.
///
/// The errors are `String`s on purpose: the UI never branches on why a call failed, it
/// shows the text as one line in its status bar, and the implementations' failures (a
/// session's, a saved result's) have nothing in common to type. A typed error here would
/// only be turned back into that line.
pub trait Source {
    /// True while attached to a live job (sampling, stacks and detaching are possible).
    fn live(&self) -> bool;
    /// Samples again: `samples` samples, every thread when `threads`; a new result.
    fn sample(&mut self, samples: u32, threads: bool) -> Result<StrataResult, String>;
    /// The full stacks of these ranks (all threads) as text, read from the live processes.
    fn stacks(&mut self, ranks: &[u32]) -> Result<String, String>;
    /// Detaches from the job; afterwards `live()` is false and the UI keeps the last result.
    fn detach(&mut self) -> Result<(), String>;
    /// Reads `variables` in these ranks' live processes (each rank stopped once), merged
    /// into value classes.
    fn read_variables(
        &mut self,
        ranks: &[u32],
        variables: &[VariableSpec],
    ) -> Result<Vec<VariableReads>, String>;
    /// One or two words for the status line.
    fn state(&self) -> &'static str {
        if self.live() {
            "attached"
        } else {
            "saved result"
        }
    }
}

/// A result read from a file: nothing to sample, nothing to detach from. The UI derives a
/// rank's stacks from the saved trees instead ([`saved_stacks`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Saved;

const NOT_LIVE: &str = "this is a saved result, not a live job: attach to the job to sample it \
                        (strata attach JOBID -i)";

impl Source for Saved {
    fn live(&self) -> bool {
        false
    }
    fn sample(&mut self, _samples: u32, _threads: bool) -> Result<StrataResult, String> {
        Err(NOT_LIVE.to_string())
    }
    fn stacks(&mut self, _ranks: &[u32]) -> Result<String, String> {
        Err(NOT_LIVE.to_string())
    }
    fn detach(&mut self) -> Result<(), String> {
        Err(NOT_LIVE.to_string())
    }
    fn read_variables(
        &mut self,
        _ranks: &[u32],
        _variables: &[VariableSpec],
    ) -> Result<Vec<VariableReads>, String> {
        Err(NOT_LIVE.to_string())
    }
}

/// The nodes of `tree` where a member ends (`holds` it, and none of the node's children
/// does), in node order.
fn ending_nodes(tree: &PrefixTree<RankSet>, holds: impl Fn(NodeId) -> bool) -> Vec<NodeId> {
    tree.node_ids()
        .filter(|&n| n != NodeId::ROOT && holds(n))
        .filter(|&n| !tree.node(n).children.iter().any(|&c| holds(c)))
        .collect()
}

/// One frame as a stack line: `function @ file:line [inlined] (module)`.
pub fn stack_frame_line(frame: &Frame) -> String {
    let mut s = frame_text(frame);
    if let Some(m) = frame.code().and_then(|c| c.module.as_ref())
        && frame.code().is_some_and(|c| c.function.is_some())
    {
        s.push_str(&format!(" ({})", m.basename()));
    }
    s
}

fn push_paths(out: &mut String, tree: &PrefixTree<RankSet>, ends: &[NodeId], indent: &str) {
    for (i, &leaf) in ends.iter().enumerate() {
        if ends.len() > 1 {
            out.push_str(&format!("{indent}path {} of {}:\n", i + 1, ends.len()));
        }
        let frames = tree.path_frames(leaf);
        for (depth, f) in frames.iter().rev().enumerate() {
            out.push_str(&format!("{indent}  #{depth:<3} {}\n", stack_frame_line(f)));
        }
    }
}

/// A rank's "full stacks" as a saved result knows them: the paths of the 3D tree (finest
/// granularity, nothing cut) where its samples ended, innermost frame first; with threads,
/// per thread. The 3D tree merges samples, so these are the distinct places the rank was
/// seen, not one stack per sample.
pub fn saved_stacks(result: &StrataResult, rank: u32) -> String {
    let tree = &result.tree_3d;
    let meta = &result.meta;
    let info = meta.ranks.iter().find(|r| r.rank == rank);
    let mut out = format!("rank {rank}");
    if let Some(host) = info.and_then(|i| i.host.as_deref()) {
        out.push_str(&format!(" on {host}"));
    }
    if let Some(pid) = info.and_then(|i| i.pid) {
        out.push_str(&format!(", pid {pid}"));
    }
    out.push_str(&format!(
        ": where its {} sample{} ended (saved 3D tree, innermost frame first)\n",
        meta.sampling.samples,
        if meta.sampling.samples == 1 { "" } else { "s" }
    ));
    if let Some(e) = info.and_then(|i| i.error.as_deref()) {
        out.push_str(&format!("error: {e}\n"));
    }
    if !tree.node(NodeId::ROOT).tasks.contains(rank) {
        out.push_str("(not in the tree: this rank was not sampled)\n");
        return out;
    }
    if tree.has_threads() {
        let threads: Vec<_> = meta.threads.iter().filter(|t| t.rank == rank).collect();
        for t in &threads {
            out.push_str(&format!("\nthread {}", t.tid));
            if let Some(name) = &t.name {
                out.push_str(&format!(" \"{name}\""));
            }
            out.push('\n');
            let ends = ending_nodes(tree, |n| tree.node(n).threads.contains(t.id));
            push_paths(&mut out, tree, &ends, "  ");
        }
        if threads.is_empty() {
            out.push_str("(no thread of this rank is in the thread table)\n");
        }
    } else {
        let ends = ending_nodes(tree, |n| tree.node(n).tasks.contains(rank));
        push_paths(&mut out, tree, &ends, "");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_result::example::ring_result;

    #[test]
    fn saved_sources_refuse_live_work() {
        let mut s = Saved;
        assert!(!s.live());
        assert!(s.sample(1, false).unwrap_err().contains("saved result"));
        assert!(s.stacks(&[0]).is_err());
        assert!(s.detach().is_err());
    }

    #[test]
    fn saved_stacks_list_every_place_a_rank_ended() {
        let r = ring_result();
        let text = saved_stacks(&r, 1);
        assert!(text.starts_with("rank 1 on node1, pid 41203:"), "{text}");
        // Rank 1 slept in every sample: one path, innermost first, _start last.
        assert!(!text.contains("path 1 of"), "{text}");
        let frames: Vec<&str> = text.lines().filter(|l| l.contains('#')).collect();
        assert!(
            frames[0].contains("#0   __GI___clock_nanosleep @ clock_nanosleep.c:78 (libc.so.6)")
        );
        assert!(frames.last().unwrap().contains("_start (ring)"));
        // Rank 0 spun in the progress engine: several places, each listed.
        let text = saved_stacks(&r, 0);
        assert!(text.contains("path 1 of 2:"), "{text}");
        assert!(
            text.contains("opal_timer_linux_get_cycles_sys_timer"),
            "{text}"
        );
        assert!(saved_stacks(&r, 99).contains("not in the tree"));
    }
}
