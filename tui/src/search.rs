//! A search of the tree view (by frame text, rank or host) and its hits, kept so that the
//! hits can be found again after the view changes.

use strata_filters::NodeId;

/// What a search looked for; kept so that its hits can be found again in a new view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Query {
    Text(String),
    Rank(u32),
    Host(String),
}

#[derive(Clone, Debug)]
pub(crate) struct Search {
    pub(crate) query: Query,
    pub(crate) hits: Vec<NodeId>,
    pub(crate) current: Option<usize>,
}
