//! Finding: searches by frame text, rank and host, and the jumps between classes and to the
//! shortest, longest, least and most populated leaves.

use super::App;
use crate::search::{Query, Search};
use crate::view::{BadRegex, Display};
use regex::RegexBuilder;
use strata_filters::taskset::format_set_shortened;
use strata_filters::{NodeId, RankSet};

impl App {
    /// The nodes a query finds in the current display, in display order.
    pub(super) fn hits_of(&self, query: &Query) -> Result<Vec<NodeId>, BadRegex> {
        let d = &self.display;
        Ok(match query {
            Query::Text(text) => {
                let re = RegexBuilder::new(text)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| BadRegex::new(text, e))?;
                d.order
                    .iter()
                    .copied()
                    .filter(|&n| re.is_match(&d.text(n)))
                    .collect()
            }
            Query::Rank(rank) => d.ending_nodes(&std::iter::once(*rank).collect()),
            Query::Host(host) => d.ending_nodes(&self.host_ranks(host)),
        })
    }

    /// Ranks on `host` (the same host by name or short name).
    pub(super) fn host_ranks(&self, host: &str) -> RankSet {
        let short = |h: &str| h.split('.').next().unwrap_or(h).to_ascii_lowercase();
        self.result
            .meta
            .ranks
            .iter()
            .filter(|r| {
                r.host
                    .as_deref()
                    .is_some_and(|h| h.eq_ignore_ascii_case(host) || short(h) == short(host))
            })
            .map(|r| r.rank)
            .collect()
    }

    pub(super) fn search_text(&mut self, text: String) {
        let query = Query::Text(text.clone());
        let hits = match self.hits_of(&query) {
            Ok(h) => h,
            Err(e) => return self.error(e.to_string()),
        };
        if hits.is_empty() {
            self.search = None;
            return self.error(format!("/{text}/: no frame matches in this view"));
        }
        // The first hit at or after the selection, as in an editor.
        let here = self
            .selected()
            .map_or(0, |n| self.display.rank_in_order[n.index()]);
        let first = hits
            .iter()
            .position(|&h| self.display.rank_in_order[h.index()] >= here)
            .unwrap_or(0);
        self.begin_search(query, hits, first, &format!("/{text}/"));
    }

    pub(super) fn find_rank(&mut self, rank: u32) {
        let tree = &self.display.tree;
        if !tree.node(NodeId::ROOT).tasks.contains(rank) {
            let why = if rank >= self.result.meta.job_size {
                format!(
                    "the job has ranks 0-{}",
                    self.result.meta.job_size.saturating_sub(1)
                )
            } else if let Some(m) = self.result.meta.missing.iter().find(|m| {
                strata_filters::taskset::parse_ranges(&m.ranks)
                    .is_ok_and(|runs| runs.iter().any(|&(a, b)| (a..b).contains(&rank)))
            }) {
                format!("missing: {}", m.reason)
            } else {
                "not in this tree (not sampled, or outside the focus)".to_string()
            };
            return self.error(format!("rank {rank}: {why}"));
        }
        let query = Query::Rank(rank);
        let hits = self.hits_of(&query).unwrap_or_default();
        // The deepest node holding the rank is one where it ends.
        let deepest = (0..hits.len())
            .min_by_key(|&i| std::cmp::Reverse(tree.depth(hits[i])))
            .unwrap_or(0);
        self.begin_search(query, hits, deepest, &format!("rank {rank}"));
    }

    pub(super) fn find_host(&mut self, host: String) {
        let ranks = self.host_ranks(&host);
        if ranks.is_empty() {
            let mut hosts: Vec<&str> = self
                .result
                .meta
                .ranks
                .iter()
                .filter_map(|r| r.host.as_deref())
                .collect();
            hosts.sort_unstable();
            hosts.dedup();
            let known = if hosts.is_empty() {
                "the result records no hosts".to_string()
            } else {
                let more = if hosts.len() > 5 { ", ..." } else { "" };
                format!("hosts: {}{more}", hosts[..hosts.len().min(5)].join(", "))
            };
            return self.error(format!("no rank ran on host '{host}' ({known})"));
        }
        let query = Query::Host(host.clone());
        let hits = self.hits_of(&query).unwrap_or_default();
        if hits.is_empty() {
            return self.error(format!(
                "host {host} (ranks {}): none of its ranks is in this view",
                format_set_shortened(&ranks, 40)
            ));
        }
        let what = format!("host {host}, ranks {}", format_set_shortened(&ranks, 40));
        self.begin_search(query, hits, 0, &what);
    }

    /// Starts a search with its hits and goes to hit `first`.
    pub(super) fn begin_search(
        &mut self,
        query: Query,
        hits: Vec<NodeId>,
        first: usize,
        what: &str,
    ) {
        self.search = Some(Search {
            query,
            hits,
            current: None,
        });
        self.go_to_hit(first, what);
    }

    pub(super) fn go_to_hit(&mut self, index: usize, what: &str) {
        let Some(s) = &mut self.search else {
            return;
        };
        let Some(&node) = s.hits.get(index) else {
            return;
        };
        s.current = Some(index);
        let n = s.hits.len();
        self.select(node);
        let places = if n == 1 { "place" } else { "places" };
        self.info(format!(
            "{what}: {} of {n} {places} (n/N: next/previous)",
            index + 1
        ));
    }

    pub(super) fn next_hit(&mut self, step: isize) {
        let Some(s) = &self.search else {
            return self.info("no search: / searches frames, # a rank, @ a host");
        };
        if s.hits.is_empty() {
            return self.error("no match in this view");
        }
        let n = s.hits.len() as isize;
        let next = match s.current {
            Some(c) => (c as isize + step).rem_euclid(n),
            None if step > 0 => 0,
            None => n - 1,
        };
        let what = match &s.query {
            Query::Text(t) => format!("/{t}/"),
            Query::Rank(r) => format!("rank {r}"),
            Query::Host(h) => format!("host {h}"),
        };
        self.go_to_hit(next as usize, &what);
    }

    pub(super) fn next_class(&mut self, step: isize) {
        let n = self.display.classes.len() as isize;
        if n == 0 {
            return self.info("no classes: the tree is empty");
        }
        let next = match self.class_cursor {
            Some(c) => (c as isize + step).rem_euclid(n),
            None if step > 0 => 0,
            None => n - 1,
        } as usize;
        self.class_cursor = Some(next);
        let class = &self.display.classes[next];
        let leaf = class
            .leaves
            .iter()
            .copied()
            .min_by_key(|l| self.display.rank_in_order[l.index()]);
        let label = format!(
            "class {} of {n}: {}:[{}]",
            next + 1,
            class.tasks.len(),
            format_set_shortened(&class.tasks, 40)
        );
        let leaves = class.leaves.len();
        if let Some(l) = leaf {
            self.select(l);
        }
        self.info(if leaves > 1 {
            format!("{label}, ending at {leaves} places")
        } else {
            label
        });
    }

    /// Selects the leaf (a node where tasks end) with the smallest `key`; among ties, the
    /// one after the selection, so that pressing again visits each.
    pub(super) fn pick_leaf(&mut self, what: &str, key: impl Fn(&Display, NodeId) -> i64) {
        let leaves = self.display.leaves();
        let Some(best) = leaves.iter().map(|&n| key(&self.display, n)).min() else {
            return;
        };
        let ties: Vec<NodeId> = leaves
            .into_iter()
            .filter(|&n| key(&self.display, n) == best)
            .collect();
        let at = ties
            .iter()
            .position(|&n| n == self.selected)
            .map_or(0, |i| (i + 1) % ties.len());
        let node = ties[at];
        self.select(node);
        let tie = if ties.len() > 1 {
            format!(" ({} of {} alike)", at + 1, ties.len())
        } else {
            String::new()
        };
        let depth = self.display.tree.depth(node) + self.display.prefix.len();
        let ending = self.display.tree.tasks_ending_at(node).len();
        self.info(format!(
            "{what}: depth {depth}, {ending} task(s) end here{tie}"
        ));
    }
}
