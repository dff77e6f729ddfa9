//! Rank lists in the verdict's sentences. The summary and the evidence are read by people
//! (and quoted in tickets): a fragmented set of a million-rank job would make them
//! megabytes long, so a long list is cut and says how many ranks it holds. The full sets
//! stay in the structured fields (`ranks`, each culprit's `ranks`).

use strata_filters::TaskSet;
use strata_filters::taskset::{format_set, format_set_shortened};

/// Longest rank list written out whole in a sentence, in characters.
pub(crate) const MAX_IN_PROSE: usize = 120;

/// `0,2-255`, or `3,17,40,...(1024 ranks)` when the list is longer than a sentence holds.
pub(crate) fn rank_list<S: TaskSet>(set: &S) -> String {
    rank_list_within(set, MAX_IN_PROSE)
}

/// [`rank_list`] with room for `max_chars` characters of ranks.
pub(crate) fn rank_list_within<S: TaskSet>(set: &S, max_chars: usize) -> String {
    let whole = format_set(set);
    if whole.len() <= max_chars {
        return whole;
    }
    format!(
        "{}({} ranks)",
        format_set_shortened(set, max_chars),
        set.count()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_filters::RankSet;

    #[test]
    fn short_lists_stay_whole_and_long_ones_say_their_size() {
        let short: RankSet = [0, 2, 3, 4].into_iter().collect();
        assert_eq!(rank_list(&short), "0,2-4");
        let long: RankSet = (0..1000).map(|r| r * 3).collect();
        let s = rank_list(&long);
        assert!(s.starts_with("0,3,6,"), "{s}");
        assert!(s.ends_with(",...(1000 ranks)"), "{s}");
        assert!(s.len() < MAX_IN_PROSE + 20, "{s}");
    }
}
