//! The verdict as a user reads it at the end of the text tree: "Why it hangs".
//!
//! A few lines: the answer and how sure, the ranks to debug with the line each is at, one
//! line per state as evidence, and for an undecided answer what would decide it. Rank
//! lists are shortened to the width the tree uses, so a 4,096-rank job stays readable.

use crate::decide::{Decision, Kind};
use crate::observe::{Activity, Motion, Observations};
use strata_filters::taskset::format_set_shortened;

/// The paragraph, rank lists shortened to `max_list` characters.
pub fn text(observations: &Observations, d: &Decision, max_list: usize) -> String {
    let mut out = String::new();
    let title = match d.kind {
        Kind::NoHangSeen => "Why it hangs: no hang seen",
        Kind::Undecided => "Why it hangs: not decided",
        _ => "Why it hangs",
    };
    out.push_str(&format!("{title} ({})\n", confidence(d.confidence)));
    out.push_str(&format!("  {}.\n", d.summary));
    for c in &d.culprits {
        let at =
            c.at.as_ref()
                .map(|p| format!(" at {}", p.short()))
                .unwrap_or_default();
        let ranks = shorten(&c.ranks, max_list);
        out.push_str(&format!("  debug [{ranks}]: {}{at}\n", c.doing));
    }
    out.push_str("  seen:\n");
    for group in observations.groups() {
        let s = &group.state;
        let (what, place) = match &s.activity {
            Activity::InMpi { call, call_site } => (format!("in {}", call.name), call_site.clone()),
            Activity::Outside { at, innermost } => {
                (format!("outside MPI ({innermost})"), at.clone())
            }
            Activity::Exited => ("exited".to_string(), None),
            Activity::Uninterruptible => ("in uninterruptible sleep".to_string(), None),
            Activity::NotSampled { why } => (format!("not sampled: {why}"), None),
        };
        let handler = if s.in_signal_handler {
            " in a signal handler"
        } else {
            ""
        };
        let at = place
            .map(|p| format!(" at {}", p.short()))
            .unwrap_or_default();
        let motion = match s.motion {
            Motion::Unchanged => "unchanged",
            Motion::Changed => "moving",
            Motion::OneSample => "one sample",
            Motion::PartlySeen => "unchanged where seen",
        };
        out.push_str(&format!(
            "    [{}] {what}{handler}{at}, {motion}\n",
            format_set_shortened(&group.ranks, max_list)
        ));
    }
    if let Some(would) = &d.would_decide {
        out.push_str(&format!("  would decide: {would}\n"));
    }
    out
}

fn confidence(c: crate::decide::Confidence) -> &'static str {
    match c {
        crate::decide::Confidence::Proved => "proved",
        crate::decide::Confidence::Likely => "likely",
        crate::decide::Confidence::Guess => "a guess",
    }
}

/// A rank list already formatted, cut to `max` characters at a comma.
fn shorten(list: &str, max: usize) -> String {
    if list.len() <= max {
        return list.to_string();
    }
    let cut = list[..max].rfind(',').unwrap_or(max);
    format!("{},…", &list[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_ring_reads_as_one_paragraph() {
        let observations = crate::observe::observe(&strata_result::example::ring_result());
        let decision = crate::decide::decide(&observations);
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
            "    [0,3-7] in MPI_Barrier at ring.c:47, unchanged"
        );
        assert_eq!(lines.len(), 7, "{t}");
    }

    #[test]
    fn long_rank_lists_are_cut_at_a_comma() {
        assert_eq!(shorten("0,2,4,6,8,10", 7), "0,2,4,…");
        assert_eq!(shorten("0-3", 7), "0-3");
    }
}
