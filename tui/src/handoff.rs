//! Hand-off to a full debugger: the command that opens gdb on one rank of a class.
//!
//! strata's daemons do not keep ranks traced between commands (each capture seizes, copies
//! and detaches within microseconds), so a rank is free for gdb to attach whenever no
//! strata command is in flight. The UI runs commands one at a time and waits for each, so
//! nothing has to be detached before the hand-off; a live session stays attached and can
//! sample again once gdb has let go.

use strata_filters::RankSet;
use strata_result::ResultMeta;

/// The command (program and arguments) that opens gdb on `rank`'s process from this host:
///
/// * the rank runs here (its host is this host, short or fully qualified, or no host was
///   recorded: a local job): `gdb -p PID`;
/// * elsewhere, in a Slurm job: `srun --jobid=ID --overlap -w HOST -N1 -n1 --pty gdb -p PID`
///   (a step inside the allocation, on the rank's node, with a terminal);
/// * elsewhere otherwise: `ssh -t HOST gdb -p PID`.
///
/// Errors name what is missing (an unknown rank, an unknown pid).
pub fn debugger_command(
    meta: &ResultMeta,
    rank: u32,
    this_host: &str,
) -> Result<Vec<String>, String> {
    let info = meta
        .ranks
        .iter()
        .find(|r| r.rank == rank)
        .ok_or_else(|| format!("rank {rank} is not in the result's rank table"))?;
    let pid = info.pid.ok_or_else(|| {
        let why = info
            .error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        format!("the pid of rank {rank} is not known{why}: no debugger can attach to it")
    })?;
    let gdb = ["gdb".to_string(), "-p".to_string(), pid.to_string()];
    let host = match info.host.as_deref() {
        Some(h) if !same_host(h, this_host) => h,
        _ => return Ok(gdb.to_vec()),
    };
    let mut cmd: Vec<String> = if meta.job.resource_manager == "slurm" {
        [
            "srun",
            &format!("--jobid={}", meta.job.id),
            "--overlap",
            "-w",
            host,
            "-N1",
            "-n1",
            "--pty",
        ]
        .map(String::from)
        .to_vec()
    } else {
        ["ssh", "-t", host].map(String::from).to_vec()
    };
    cmd.extend(gdb);
    Ok(cmd)
}

/// Host names name the same host when equal (any case) or when one is the other's short
/// form: `node12` and `node12.cluster.example` (STAT's daemons found no processes over
/// exactly this difference, LLNL/STAT#33).
fn same_host(a: &str, b: &str) -> bool {
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_ascii_lowercase();
    a.eq_ignore_ascii_case(b) || ((!a.contains('.') || !b.contains('.')) && short(a) == short(b))
}

/// The rank to debug for a class: its lowest rank with a known pid and no sampling error,
/// else its lowest rank (whose missing pid the command then reports).
pub fn representative(meta: &ResultMeta, class: &RankSet) -> Option<u32> {
    class
        .iter()
        .find(|&r| {
            meta.ranks
                .iter()
                .find(|i| i.rank == r)
                .is_some_and(|i| i.pid.is_some() && i.error.is_none())
        })
        .or_else(|| class.min())
}

/// A command as a user would type it in a POSIX shell (arguments quoted when needed).
pub fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_=./:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_result::{JobInfo, RankInfo};

    fn meta(rm: &str, ranks: Vec<RankInfo>) -> ResultMeta {
        ResultMeta {
            job: JobInfo {
                id: "4711".into(),
                resource_manager: rm.into(),
                ..Default::default()
            },
            job_size: ranks.len() as u32,
            ranks,
            ..Default::default()
        }
    }

    fn rank(rank: u32, host: Option<&str>, pid: Option<u32>) -> RankInfo {
        RankInfo {
            rank,
            host: host.map(String::from),
            pid,
            ..Default::default()
        }
    }

    fn words(cmd: Result<Vec<String>, String>) -> String {
        shell_line(&cmd.unwrap())
    }

    #[test]
    fn local_ranks_get_plain_gdb() {
        let m = meta("slurm", vec![rank(0, Some("login1"), Some(4242))]);
        assert_eq!(words(debugger_command(&m, 0, "login1")), "gdb -p 4242");
        // Short against fully qualified names: the same host.
        assert_eq!(
            words(debugger_command(&m, 0, "login1.cluster.example")),
            "gdb -p 4242"
        );
        // No host recorded: a local job.
        let m = meta("pids", vec![rank(0, None, Some(7))]);
        assert_eq!(words(debugger_command(&m, 0, "anywhere")), "gdb -p 7");
    }

    #[test]
    fn remote_ranks_go_through_slurm_or_ssh() {
        let m = meta(
            "slurm",
            vec![rank(0, Some("n1"), Some(10)), rank(1, Some("n2"), Some(11))],
        );
        assert_eq!(
            words(debugger_command(&m, 1, "n1")),
            "srun --jobid=4711 --overlap -w n2 -N1 -n1 --pty gdb -p 11"
        );
        let m = meta("local", vec![rank(0, Some("n2.example"), Some(10))]);
        assert_eq!(
            words(debugger_command(&m, 0, "n1.example")),
            "ssh -t n2.example gdb -p 10"
        );
    }

    #[test]
    fn missing_pids_and_ranks_are_named() {
        let mut r = rank(3, Some("n1"), None);
        r.error = Some("not attached: permission denied".into());
        let m = meta("slurm", vec![r]);
        let e = debugger_command(&m, 3, "n1").unwrap_err();
        assert!(e.contains("pid of rank 3 is not known"), "{e}");
        assert!(e.contains("permission denied"), "{e}");
        let e = debugger_command(&m, 9, "n1").unwrap_err();
        assert!(e.contains("rank 9 is not in"), "{e}");
    }

    #[test]
    fn the_representative_is_the_lowest_debuggable_rank() {
        let mut r0 = rank(0, Some("n1"), Some(10));
        r0.error = Some("task exited".into());
        let m = meta(
            "slurm",
            vec![r0, rank(1, Some("n1"), None), rank(2, None, Some(12))],
        );
        let class: RankSet = [0, 1, 2].into_iter().collect();
        assert_eq!(representative(&m, &class), Some(2));
        let hopeless: RankSet = [0, 1].into_iter().collect();
        assert_eq!(representative(&m, &hopeless), Some(0));
    }

    #[test]
    fn shell_lines_quote_what_needs_it() {
        let argv = ["ssh", "-t", "a b", "it's"].map(String::from);
        assert_eq!(shell_line(&argv), r"ssh -t 'a b' 'it'\''s'");
    }
}
