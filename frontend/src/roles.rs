//! The internal roles of the one `strata` binary: `strata daemon` and `strata commnode`,
//! started by a launcher, never by hand. They read the session key from the environment
//! and report failures as one line on stderr (the front end's terminal) and exit code 1.

use std::net::SocketAddr;
use std::ops::Range;

use clap::Args;
use strata_proto::auth::SessionKey;
use strata_proto::overlay::Role;

use crate::cli::Failure;
use crate::exit::Exit;

#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// Addresses of the level above, comma-separated; the parent is chosen by index.
    #[arg(long, value_delimiter = ',', required = true)]
    pub parents: Vec<String>,
    /// Number of daemons in the session.
    #[arg(long)]
    pub daemons: u32,
    /// This daemon's index (default: the resource manager's node index).
    #[arg(long)]
    pub index: Option<u32>,
}

#[derive(Debug, Args, Default)]
pub struct CommnodeArgs {
    #[arg(long, required_unless_present = "in_job")]
    pub parent: Option<String>,
    #[arg(long, required_unless_present = "in_job")]
    pub index: Option<u32>,
    /// Its level in the tree (1: a child of the front end).
    #[arg(long, default_value_t = 1)]
    pub level: u32,
    /// Children's indices, `first-end` (end exclusive).
    #[arg(long, value_parser = parse_range, required_unless_present = "in_job")]
    pub children: Option<Range<u32>>,
    #[arg(long, value_parser = ["daemon", "commnode"], required_unless_present = "in_job")]
    pub child_role: Option<String>,
    /// Per child, the daemons below it (`first-end,...`), for reports.
    #[arg(long, value_delimiter = ',', value_parser = parse_range)]
    pub child_daemons: Vec<Range<u32>>,
    /// `HOST:PORT` to listen on; `auto` as the host: the address this host's name resolves to.
    #[arg(long, required_unless_present = "in_job")]
    pub listen: Option<String>,
    /// Launched into a job (one launch for a whole level): the arguments of every commnode
    /// of the level, one string each; this one takes the `SLURM_PROCID`-th.
    #[arg(
        long,
        allow_hyphen_values = true,
        conflicts_with_all = ["parent", "index", "children", "child_role", "listen"]
    )]
    pub in_job: Vec<String>,
}

/// `--in-job`: this task's arguments among the level's (by `SLURM_PROCID`).
fn own_line(lines: &[String]) -> Result<CommnodeArgs, Failure> {
    let procid: usize = std::env::var("SLURM_PROCID")
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Failure::new(Exit::BadInput, "--in-job needs SLURM_PROCID (srun)"))?;
    let line = lines.get(procid).ok_or_else(|| {
        Failure::new(
            Exit::BadInput,
            format!("--in-job: task {procid} of {} lines", lines.len()),
        )
    })?;
    #[derive(Debug, clap::Parser)]
    struct One {
        #[command(flatten)]
        args: CommnodeArgs,
    }
    let words = std::iter::once("commnode").chain(line.split_whitespace());
    <One as clap::Parser>::try_parse_from(words)
        .map(|one| one.args)
        .map_err(|e| Failure::new(Exit::BadInput, format!("--in-job: {e}")))
}

fn parse_range(text: &str) -> Result<Range<u32>, String> {
    let (a, b) = text
        .split_once('-')
        .ok_or_else(|| format!("'{text}' is not a range first-end"))?;
    let a: u32 = a.parse().map_err(|_| format!("'{text}': bad start"))?;
    let b: u32 = b.parse().map_err(|_| format!("'{text}': bad end"))?;
    if a > b {
        return Err(format!("'{text}': start after end"));
    }
    Ok(a..b)
}

/// The async runtime of every networked role (front end, commnode, daemon, emulator): two
/// workers are plenty for a node's links, and leave the cores to the sampling threads.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::new(Exit::Internal, format!("cannot start the runtime: {e}")))
}

fn key() -> Result<SessionKey, Failure> {
    SessionKey::from_env().map_err(|e| Failure::new(Exit::BadInput, e))
}

pub fn daemon(args: DaemonArgs) -> Result<Exit, Failure> {
    let key = key()?;
    let index = match args.index {
        Some(i) => i,
        None => std::env::var("SLURM_NODEID")
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                Failure::new(Exit::BadInput, "--index is needed outside a Slurm step")
            })?,
    };
    let place = strata_daemon::agent::Place {
        parents: args.parents,
        index,
        daemons: args.daemons,
    };
    runtime()?
        .block_on(strata_daemon::agent::run(place, key))
        .map_err(|e| Failure::new(Exit::Internal, format!("daemon {index}: {e}")))?;
    Ok(Exit::Complete)
}

pub fn commnode(args: CommnodeArgs) -> Result<Exit, Failure> {
    let key = key()?;
    let args = if args.in_job.is_empty() {
        args
    } else {
        own_line(&args.in_job)?
    };
    let bad = |what: &str| Failure::new(Exit::BadInput, format!("commnode: {what} is missing"));
    let listen = args.listen.ok_or_else(|| bad("--listen"))?;
    let listen = match listen.strip_prefix("auto:") {
        Some(port) => format!("{}:{port}", strata_launcher::slurm::this_host_address()),
        None => listen,
    };
    let listen: SocketAddr = listen
        .parse()
        .map_err(|e| Failure::new(Exit::BadInput, format!("--listen {listen}: {e}")))?;
    let place = strata_commnode::node::Place {
        parent: args.parent.ok_or_else(|| bad("--parent"))?,
        index: args.index.ok_or_else(|| bad("--index"))?,
        level: args.level,
        children: args.children.ok_or_else(|| bad("--children"))?,
        child_role: if args.child_role.as_deref() == Some("daemon") {
            Role::Daemon
        } else {
            Role::Commnode
        },
        daemons_of_child: args.child_daemons,
        listen,
    };
    let index = place.index;
    runtime()?
        .block_on(strata_commnode::node::run(place, key, |addr| {
            // The launcher reads this first line to learn where the commnode listens.
            println!("listening {addr}");
            use std::io::Write;
            let _ = std::io::stdout().flush();
        }))
        .map_err(|e| Failure::new(Exit::Internal, format!("commnode {index}: {e}")))?;
    Ok(Exit::Complete)
}
