//! One module per subcommand. Each turns its parsed arguments ([`crate::cli`]) into what the
//! library crates take, runs it, and reports the outcome as an [`Exit`] or a [`Failure`].
//! [`show`] is the printing and file writing that several commands share.

pub mod attach;
pub mod bench;
pub mod demo;
pub mod dump;
pub mod roles;
pub mod run;
pub mod show;
pub mod view;
pub mod watch;

use crate::cli::{Cli, Command};
use crate::exit::Exit;
use crate::failure::Failure;

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Exit, Failure> {
    match cli.command {
        Command::View(args) => view::run(args),
        Command::Dump(args) => dump::run(args),
        Command::Attach(args) => attach::run(args),
        Command::Demo(args) => demo::run(args),
        Command::DemoRank(args) => demo::rank_main(args),
        Command::Daemon(args) => roles::daemon(args),
        Command::Bench(args) => bench::run(args),
        Command::BenchDaemons(args) => bench::emulate(args),
        Command::Commnode(args) => roles::commnode(args),
        Command::IndexDebugInfo(args) => roles::index_debug_info(args),
        Command::Watch(args) => watch::run(args),
        Command::Run(args) => run::run(args),
    }
}
