//! The hang report of `strata watch`: a directory with the snapshot's result files (as
//! `strata attach` writes them), `summary.txt` (one page a person reads first) and
//! `watch.json` (the statistics behind the decision, for scripts).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use strata_filters::ViewOptions;
use strata_filters::taskset::format_runs;
use strata_progress::order::ProgressOrder;
use strata_progress::source::SourceIndex;
use strata_result::render::{self, Format, text::TextOptions};
use strata_result::{JobInfo, StrataResult, TreeKind};

use crate::detector::Stats;
use crate::events::{OnHang, Probed, Trigger};
use crate::verify::{Classification, Verification};

/// Everything the report says about one verified hang.
#[derive(Serialize, Debug)]
pub struct Hang<'a> {
    pub job: &'a JobInfo,
    /// When the watch started (RFC 3339).
    pub started: &'a str,
    #[serde(serialize_with = "as_seconds")]
    pub detected_after: Duration,
    /// When the hang was verified, seconds since the Unix epoch (to compare with a fault's
    /// injection time in `tests/bench/watch.sh`).
    pub detected_at_unix: f64,
    pub seed: u64,
    pub trigger: &'a Trigger,
    pub stats: Stats,
    pub verification: &'a Verification,
    pub classification: &'a Classification,
    pub timeline: &'a [Probed],
    pub on_hang: OnHang,
    /// The user's `--mpi-pattern`; `None` (null) when strata's own definition of MPI
    /// frames decided what is inside MPI.
    pub mpi_pattern: Option<&'a str>,
}

fn as_seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Writes the report directory: the result files (with the progress order's
/// `progress.txt` and `progress.json`, the verdict in `result.json`, and `report.html`),
/// `summary.txt`,
/// `watch.json`.
pub fn write(
    dir: &Path,
    result: &StrataResult,
    hang: &Hang,
    progress: &ProgressOrder,
    verdict: &strata_verdict::Verdict,
) -> std::io::Result<()> {
    // progress.json carries the verdict too, as `strata attach --progress` writes it.
    let with_verdict = strata_progress::report::WithFields {
        order: progress,
        fields: strata_result::annotation::Annotation::result_fields(verdict),
    };
    let analyses = strata_result::annotation::Annotations(vec![&with_verdict, verdict]);
    strata_result::directory::write_all(result, dir, Some(&analyses))?;
    let drawn = strata_report::Analyses {
        verdict,
        progress: Some(progress),
    };
    std::fs::write(
        dir.join(strata_report::FILE),
        strata_report::html(result, drawn, &strata_report::Options::default()),
    )?;
    std::fs::write(
        dir.join("summary.txt"),
        summary(result, hang, progress, verdict),
    )?;
    let json = serde_json::to_string_pretty(hang).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("watch.json"), json + "\n")
}

/// Ranks in any order as a compact list: `[0,3-7]`.
pub fn ranks_text(ranks: &[u32]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for r in sorted {
        match runs.last_mut() {
            Some(last) if last.1 == r => last.1 = r + 1,
            _ => runs.push((r, r + 1)),
        }
    }
    format!("[{}]", format_runs(&runs))
}

/// Host and pid of a rank, as the snapshot recorded them.
fn whereabouts(result: &StrataResult, rank: u32) -> String {
    match result.meta.ranks.iter().find(|r| r.rank == rank) {
        Some(r) => format!(
            "on {} pid {}",
            r.host.as_deref().unwrap_or("?"),
            r.pid.map_or("?".to_string(), |p| p.to_string())
        ),
        None => "(not in the snapshot)".to_string(),
    }
}

/// The progress order of the snapshot (who is behind, by position in the code), with the
/// sources where the debug info says they are.
pub fn progress_of(result: &StrataResult) -> ProgressOrder {
    strata_progress::order::analyze(result, &mut SourceIndex::new(Vec::new()))
}

/// The verdict on the snapshot (why it hangs), the calls' arguments read from the sources
/// where the debug info says they are.
pub fn verdict_of(result: &StrataResult, progress: &ProgressOrder) -> strata_verdict::Verdict {
    strata_verdict::Verdict::of(result, &mut SourceIndex::new(Vec::new()), Some(progress))
}

/// The one-page text summary (also printed on stdout when the hang is found).
pub fn summary(
    result: &StrataResult,
    hang: &Hang,
    progress: &ProgressOrder,
    verdict: &strata_verdict::Verdict,
) -> String {
    let mut s = String::new();
    let job = hang.job;
    let _ = writeln!(
        s,
        "strata watch: job {} ({}) is HUNG",
        job.id, job.resource_manager
    );
    let _ = writeln!(
        s,
        "watched since {}; hang detected after {:.1} s",
        hang.started,
        hang.detected_after.as_secs_f64()
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "What was seen");
    match hang.trigger {
        Trigger::Alarm(a) => {
            let _ = writeln!(
                s,
                "  {} probes in a row had S_out (the share of monitored ranks outside MPI) at \
                 or below {:.2},",
                a.k, a.threshold
            );
            let _ = writeln!(
                s,
                "  which healthy samples of this job do with probability at most q = {:.3} \
                 each: q^{} = {:.2e} <= alpha = {}",
                a.q, a.k, a.probability, a.alpha
            );
            let _ = writeln!(
                s,
                "  (model of {} samples, p = {:.2}, d = {:.2}, interval {:.0} ms).",
                a.n, a.p_hat, a.d, hang.stats.interval_ms
            );
        }
        Trigger::Stillness { samples, s_out } => {
            let _ = writeln!(
                s,
                "  S_out (the share of monitored ranks outside MPI) stayed at {s_out:.2} or \
                 as low for {samples} probes:"
            );
            let _ = writeln!(
                s,
                "  too little variation for the statistical test (the job may have hung \
                 before the watch learned its normal behaviour), so it was verified anyway."
            );
        }
        Trigger::Stall(stall) => {
            let _ = writeln!(
                s,
                "  none of the {} monitored ranks had made an MPI transition for {:.1} s or \
                 more, by strata's PMPI library,",
                stall.ranks, stall.idle_s
            );
            let _ = writeln!(
                s,
                "  when the longest any of them had gone between two before was {:.3} s: past \
                 {} times each rank's own longest, it was verified.",
                stall.longest_s,
                crate::stall::STALL_FACTOR
            );
        }
    }
    let _ = writeln!(
        s,
        "  Verification: in {} samples of every rank, no rank's path (function level, cut \
         below MPI) changed.",
        crate::verify::VERIFY_SAMPLES
    );
    if !hang.verification.unverified_ranks.is_empty() {
        let _ = writeln!(
            s,
            "  Ranks missing from some verification sample (not judged): {}",
            ranks_text(&hang.verification.unverified_ranks)
        );
    }
    let _ = writeln!(s);
    match hang.classification {
        Classification::Computation { suspects } => {
            let _ = writeln!(
                s,
                "Computation hang: {} rank(s) stayed outside MPI, the others wait for them",
                suspects.len()
            );
            for &r in suspects.iter().take(20) {
                let _ = writeln!(s, "  suspect rank {r} {}", whereabouts(result, r));
            }
            if suspects.len() > 20 {
                let _ = writeln!(s, "  ... {} more", suspects.len() - 20);
            }
        }
        Classification::Communication { smallest_classes } => {
            let _ = writeln!(
                s,
                "Communication hang: every rank waits inside MPI; the least-populated paths:"
            );
            for (path, ranks) in smallest_classes {
                let tail: Vec<&str> = path
                    .iter()
                    .rev()
                    .take(3)
                    .rev()
                    .map(String::as_str)
                    .collect();
                let _ = writeln!(
                    s,
                    "  {}:{}  ... > {}",
                    ranks.len(),
                    ranks_text(ranks),
                    tail.join(" > ")
                );
            }
        }
    }
    let _ = writeln!(s);
    // Why, and whom to debug, from the snapshot's MPI calls and motion: the same verdict
    // `strata attach` prints.
    s.push_str(&verdict.paragraph(200));
    let _ = writeln!(s);
    // Who is behind, before the tree: the first thing a person triaging wants.
    s.push_str(&strata_progress::report::text(progress, 200));
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "The snapshot ({} samples of every rank):",
        result.meta.sampling.samples
    );
    s.push_str(&render::render(
        result,
        Format::Text,
        TreeKind::ThreeD,
        ViewOptions::default(),
        TextOptions::terminal(false, Some(100)),
    ));
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Next: strata view result.json (in this directory) to browse it; watch.json holds the \
         statistics."
    );
    s
}
