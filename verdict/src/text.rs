//! The verdict as a user reads it at the end of the text tree: "Why it hangs".
//!
//! A few lines: the answer and how sure, the ranks to debug with the line each is at, one
//! line per state as evidence, and for an undecided answer what would decide it. Rank
//! lists are shortened to the width the tree uses, so a 4,096-rank job stays readable.

use crate::decide::{Confidence, Decision, Kind};
use crate::describe::seen_line;
use crate::observe::Observations;
use crate::prose::rank_list_within;
use strata_filters::taskset::format_set_shortened;

/// How long a rank list the verdict's sentences write out (then cut, with its size):
/// [`seen_lines`] given it words its lines as the evidence does.
pub const PROSE_LIST: usize = crate::prose::MAX_IN_PROSE;

/// The paragraph, rank lists shortened to `max_list` characters.
pub fn text(observations: &Observations, d: &Decision, max_list: usize) -> String {
    let mut out = String::new();
    let (title, summary) = title(d);
    out.push_str(&format!("{title}\n  {summary}.\n"));
    // A deadlock ring of thousands of ranks names each of them in `result.json`; on screen
    // the first few say where to look.
    const SHOWN: usize = 8;
    for c in d.culprits.iter().take(SHOWN) {
        let at =
            c.at.as_ref()
                .map(|p| format!(" at {}", p.short()))
                .unwrap_or_default();
        let ranks = format_set_shortened(&c.set, max_list);
        out.push_str(&format!("  debug [{ranks}]: {}{at}\n", c.doing));
    }
    if d.culprits.len() > SHOWN {
        out.push_str(&format!(
            "  debug {} more groups of ranks: see the verdict in result.json\n",
            d.culprits.len() - SHOWN
        ));
    }
    out.push_str("  seen:\n");
    for line in seen_lines(observations, max_list) {
        out.push_str(&format!("    {line}\n"));
    }
    if let Some(would) = &d.would_decide {
        out.push_str(&format!("  would decide: {would}\n"));
    }
    out
}

/// The answer's title (`Why it hangs (likely)`, `Why it hangs: not decided`) and its one
/// sentence, as the paragraph starts; the HTML report leads with the same words.
pub fn title(d: &Decision) -> (String, &str) {
    // An undecided answer says so once, in the title, and claims no confidence.
    match d.kind {
        Kind::NoHangSeen => (
            format!("Why it hangs: no hang seen ({})", confidence(d.confidence)),
            d.summary.as_str(),
        ),
        Kind::Undecided => (
            "Why it hangs: not decided".to_string(),
            d.summary
                .strip_prefix("not decided: ")
                .unwrap_or(&d.summary),
        ),
        _ => (
            format!("Why it hangs ({})", confidence(d.confidence)),
            d.summary.as_str(),
        ),
    }
}

/// One line per state the ranks were seen in (`[0-3] in MPI_Recv at ring.c:12, unchanged
/// over 3 samples`), rank lists shortened to `max_list` characters.
pub fn seen_lines(observations: &Observations, max_list: usize) -> Vec<String> {
    observations
        .groups()
        .iter()
        .map(|g| seen_line(rank_list_within(&g.ranks, max_list), &g.state))
        .collect()
}

fn confidence(c: Confidence) -> &'static str {
    match c {
        Confidence::Proved => "proved",
        Confidence::Likely => "likely",
        Confidence::Guess => "a guess",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_ring_reads_as_one_paragraph() {
        let observations = crate::observe::observe(&strata_result::example::ring_result());
        let decision = crate::decide::decide(&observations, None);
        let t = text(&observations, &decision, 80);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "Why it hangs (likely)");
        assert!(lines[1].starts_with("  rank 1 outside MPI"), "{t}");
        assert_eq!(
            lines[2],
            "  debug [1]: outside MPI in main (__GI___clock_nanosleep) at ring.c:38"
        );
        assert_eq!(
            lines[4],
            "    [0,3-7] in MPI_Barrier at ring.c:47, unchanged in every sample"
        );
        assert_eq!(lines.len(), 7, "{t}");
    }
}
