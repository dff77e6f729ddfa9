//! The one-line summary above a rendered tree: job, ranks, samples, tree and view.

use crate::model::{StrataResult, TreeKind};
use strata_filters::{Granularity, TaskSet, ViewOptions};

/// The one-line summary above a tree.
pub fn header_line(result: &StrataResult, kind: TreeKind, opts: ViewOptions) -> String {
    header_parts(result, kind, opts).join(" · ")
}

/// The items of [`header_line`]: the job, ranks sampled, samples, tree and view. The
/// terminal UI wraps them over its status lines.
pub fn header_parts(result: &StrataResult, kind: TreeKind, opts: ViewOptions) -> Vec<String> {
    let m = &result.meta;
    let mut job = format!("job {} ({})", m.job.id, m.job.resource_manager);
    if let Some(step) = &m.job.step {
        job.push_str(&format!(" step {step}"));
    }
    let mut parts = vec![
        job,
        format!("{} of {} ranks", result.sampled_ranks(), m.job_size),
        format!(
            "{} sample{} @ {} ms",
            m.sampling.samples,
            if m.sampling.samples == 1 { "" } else { "s" },
            m.sampling.interval_ms
        ),
    ];
    if m.sampling.threads {
        parts.push("all threads".to_string());
    }
    parts.push(format!("{} tree", kind.as_str().to_uppercase()));
    parts.push(opts.granularity.to_string());
    if opts.cut_below_mpi {
        parts.push("cut below MPI".to_string());
    }
    if opts.hide_start_up {
        parts.push("start-up hidden".to_string());
    }
    let tree = result.tree(kind);
    if opts.hides_runtime_threads(tree) {
        let n = strata_filters::runtime_threads(tree).count();
        if n > 0 {
            let s = if n == 1 { "" } else { "s" };
            parts.push(format!("{n} MPI runtime thread{s} hidden"));
        }
    }
    parts
}

/// The granularity names for help texts.
pub fn granularity_names() -> String {
    Granularity::ALL.map(|g| g.as_str()).join(", ")
}
