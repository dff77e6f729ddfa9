//! The internal roles of the one `strata` binary, never started by hand: `strata daemon`
//! and `strata commnode`, started by a launcher, which read the session key from the
//! environment and report failures as one line on stderr (the front end's terminal) and
//! exit code 1; and `strata index-debug-info`, started by a daemon, detached, with no
//! environment and no terminal.

use std::net::SocketAddr;

use strata_proto::auth::SessionKey;
use strata_proto::overlay::Role;

use crate::cli::{CommnodeArgs, DaemonArgs, IndexDebugInfoArgs};
use crate::exit::Exit;
use crate::failure::Failure;

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

fn key() -> Result<SessionKey, Failure> {
    Ok(SessionKey::from_env()?)
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
    strata_session::gather::runtime()?
        .block_on(strata_daemon::agent::run(place, key))
        .map_err(|e| Failure::internal(format!("daemon {index}: {e}")))?;
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
    strata_session::gather::runtime()?
        .block_on(strata_commnode::node::run(place, key, |addr| {
            // The launcher reads this first line to learn where the commnode listens.
            println!("listening {addr}");
            use std::io::Write;
            let _ = std::io::stdout().flush();
        }))
        .map_err(|e| Failure::internal(format!("commnode {index}: {e}")))?;
    Ok(Exit::Complete)
}

/// Builds one debug index cache entry for a daemon (see
/// `strata_daemon::debug_index::detached`): the binary on stdin, mapped from `name`.
pub fn index_debug_info(args: IndexDebugInfoArgs) -> Result<Exit, Failure> {
    use std::io::Read;
    use strata_daemon::debug_index::IndexCache;
    use strata_daemon::symbols::{SymbolOptions, Symbolizer};
    let cache = IndexCache::new(args.cache);
    let Some(lock) = cache.try_lock(&args.key) else {
        eprintln!(
            "strata: index-debug-info: {}: another process is building it",
            args.key
        );
        return Ok(Exit::Complete);
    };
    // Daemons that miss this entry meanwhile read the binary lazily instead of waiting.
    lock.mark_detached();
    let mut data = Vec::new();
    std::io::stdin()
        .read_to_end(&mut data)
        .map_err(|e| Failure::new(Exit::BadInput, format!("stdin: {e}")))?;
    // The daemon waited for the binary; nobody waits for the index.
    strata_launcher::priority::lower_current_thread();
    let mut image = strata_daemon::images::Image::parse(args.name.clone(), data)
        .map_err(|e| Failure::new(Exit::BadInput, format!("{}: {e}", args.name)))?;
    if image.build_id.is_none() {
        // Keyed by its file's path, size and modification time: the key check below
        // refuses a file replaced since the daemon read it.
        use std::os::unix::fs::MetadataExt;
        image.modified = std::fs::metadata(&args.name)
            .ok()
            .map(|md| (md.mtime(), md.mtime_nsec()));
    }
    if Symbolizer::index_key(&image).as_deref() != Some(args.key.as_str()) {
        return Err(Failure::new(
            Exit::BadInput,
            format!("{}: the binary on stdin is not {}", args.name, args.key),
        ));
    }
    let mut options = SymbolOptions {
        cache: Some(cache),
        // This is the process that builds whatever the size.
        inline_limit: u64::MAX,
        builder: None,
        ..SymbolOptions::default()
    };
    if !args.debug_dir.is_empty() {
        options.debug_dirs = args.debug_dir;
    }
    let done = Symbolizer::new(options)
        .build_cache_entry(&std::sync::Arc::new(image), &args.name)
        .map_err(Failure::internal)?;
    drop(lock);
    eprintln!("strata: index-debug-info: {done}");
    Ok(Exit::Complete)
}
