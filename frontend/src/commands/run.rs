//! `strata run [--] LAUNCH COMMAND`: a job started with strata's PMPI library preloaded in
//! every rank.
//!
//! The library is embedded in this binary (built by `build.rs` from `pmpi/`), so the one
//! written out is the one this strata's daemons read. It goes to a directory every node
//! reads (by default in the home directory), under a name that says its version and
//! content, so that strata versions side by side never overwrite each other's library.
//! Then the launch command is run in strata's place (exec: the launcher's exit status and
//! signals are the job's, as without strata) with the library in `LD_PRELOAD`: in the
//! environment for `srun` and hydra's `mpiexec`, which pass it on to the ranks, and as
//! `-x LD_PRELOAD=...` for Open MPI's `mpirun` and `prterun`, which pass on only what they
//! are told.

use crate::cli::RunArgs;
use crate::exit::Exit;
use crate::failure::Failure;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The library, as `build.rs` built it.
const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pmpi/libstrata_pmpi.so"));

pub fn run(args: RunArgs) -> Result<Exit, Failure> {
    let dir = match args.library_dir {
        Some(dir) => dir,
        None => default_dir().ok_or_else(|| {
            Failure::new(
                Exit::BadInput,
                "neither XDG_CACHE_HOME nor HOME is set: give --library-dir DIR, a directory \
                 every node of the job reads",
            )
        })?,
    };
    let library = write_library(&dir).map_err(|e| {
        Failure::new(
            Exit::PermissionDenied,
            format!(
                "cannot write strata's PMPI library into {}: {e} (give --library-dir DIR)",
                dir.display()
            ),
        )
    })?;
    let launch = Launch::plan(&args.command, &library);
    if args.dry_run {
        println!("{}", launch.shell_line());
        return Ok(Exit::Complete);
    }
    let error = std::os::unix::process::CommandExt::exec(&mut launch.command());
    Err(Failure::new(
        Exit::BadInput,
        format!(
            "cannot run {}: {error}",
            Path::new(&launch.program).display()
        ),
    ))
}

/// `$XDG_CACHE_HOME/strata`, else `~/.cache/strata`.
fn default_dir() -> Option<PathBuf> {
    let non_empty = |v: OsString| (!v.is_empty()).then_some(v);
    if let Some(cache) = std::env::var_os("XDG_CACHE_HOME").and_then(non_empty) {
        return Some(PathBuf::from(cache).join("strata"));
    }
    let home = std::env::var_os("HOME").and_then(non_empty)?;
    Some(PathBuf::from(home).join(".cache").join("strata"))
}

/// Writes the library into `dir` unless the same one is there; returns its path. Written
/// under a temporary name and renamed into place, so that a rank never loads half a file
/// and two `strata run`s at once do not trip over each other.
fn write_library(dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!(
        "libstrata_pmpi-{}-{:016x}.so",
        env!("CARGO_PKG_VERSION"),
        fnv1a(LIBRARY)
    ));
    if std::fs::read(&path).is_ok_and(|known| known == LIBRARY) {
        return Ok(path);
    }
    let partial = dir.join(format!(".libstrata_pmpi.{}.partial", std::process::id()));
    std::fs::write(&partial, LIBRARY)?;
    std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755))?;
    std::fs::rename(&partial, &path)?;
    Ok(path)
}

/// FNV-1a, 64 bits: a name for the library's content (not a security measure).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The launch command with the library preloaded.
#[derive(Debug, PartialEq, Eq)]
struct Launch {
    program: OsString,
    args: Vec<OsString>,
    /// `LD_PRELOAD` for the launcher's environment, when it passes its environment on.
    preload: Option<OsString>,
}

impl Launch {
    /// How `command` (the launcher first) runs with `library` preloaded in its ranks.
    fn plan(command: &[OsString], library: &Path) -> Launch {
        let (program, rest) = command.split_first().expect("clap requires a command");
        let mut value = library.as_os_str().to_os_string();
        if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            value.push(":");
            value.push(existing);
        }
        if is_open_mpi(program) {
            let mut args = vec![OsString::from("-x"), {
                let mut x = OsString::from("LD_PRELOAD=");
                x.push(&value);
                x
            }];
            args.extend(rest.iter().cloned());
            Launch {
                program: program.clone(),
                args,
                preload: None,
            }
        } else {
            Launch {
                program: program.clone(),
                args: rest.to_vec(),
                preload: Some(value),
            }
        }
    }

    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args);
        if let Some(preload) = &self.preload {
            c.env("LD_PRELOAD", preload);
        }
        c
    }

    /// The command as a shell line (`--dry-run`).
    fn shell_line(&self) -> String {
        let quote = |s: &OsStr| {
            let s = s.to_string_lossy();
            if !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
            {
                s.into_owned()
            } else {
                format!("'{}'", s.replace('\'', r"'\''"))
            }
        };
        let mut words: Vec<String> = Vec::new();
        if let Some(preload) = &self.preload {
            words.push(format!("LD_PRELOAD={}", quote(preload)));
        }
        words.push(quote(&self.program));
        words.extend(self.args.iter().map(|a| quote(a)));
        words.join(" ")
    }
}

/// Whether the launcher is Open MPI's (`mpirun`/`mpiexec` of Open MPI, `prterun`,
/// `orterun`), which passes on to the ranks only the variables `-x` names. By name where
/// the name says; a bare `mpirun` or `mpiexec` (Open MPI's, or hydra's of MPICH and Intel
/// MPI) by what `--version` prints.
fn is_open_mpi(program: &OsStr) -> bool {
    let name = Path::new(program)
        .file_name()
        .map(|n| n.as_bytes().to_vec())
        .unwrap_or_default();
    let name = String::from_utf8_lossy(&name);
    if name.starts_with("prterun") || name.starts_with("orterun") || name.ends_with(".openmpi") {
        return true;
    }
    if !(name.starts_with("mpirun") || name.starts_with("mpiexec")) || name.ends_with(".mpich") {
        return false;
    }
    Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok_and(|out| {
            let said = [out.stdout, out.stderr].concat();
            let said = String::from_utf8_lossy(&said);
            said.contains("Open MPI") || said.contains("OpenRTE") || said.contains("PRRTE")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn open_mpi_is_told_with_x_and_the_others_through_the_environment() {
        let lib = Path::new("/home/u/.cache/strata/libstrata_pmpi-0.1.0-00.so");
        let open_mpi = Launch::plan(&words("mpirun.openmpi -n 4 ./app"), lib);
        assert_eq!(open_mpi.preload, None);
        assert_eq!(open_mpi.args[0], "-x");
        assert!(
            open_mpi.args[1]
                .to_string_lossy()
                .starts_with("LD_PRELOAD=/home/u/")
        );
        assert_eq!(open_mpi.args[2..], words("-n 4 ./app")[..]);
        for hydra in ["srun -n 4 ./app", "mpiexec.mpich -n 4 ./app"] {
            let launch = Launch::plan(&words(hydra), lib);
            assert!(launch.preload.is_some(), "{hydra}");
            assert_eq!(launch.args, words(hydra)[1..], "{hydra}");
            assert!(
                launch.shell_line().starts_with("LD_PRELOAD=/home/u/"),
                "{hydra}"
            );
        }
    }

    #[test]
    fn shell_lines_quote_what_a_shell_would_split() {
        let launch = Launch {
            program: "srun".into(),
            args: vec!["--job-name=a b".into(), "it's".into()],
            preload: None,
        };
        assert_eq!(launch.shell_line(), r"srun '--job-name=a b' 'it'\''s'");
    }

    #[test]
    fn the_library_is_written_once_per_content() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_library(dir.path()).unwrap();
        assert_eq!(std::fs::read(&first).unwrap(), LIBRARY);
        let again = write_library(dir.path()).unwrap();
        assert_eq!(first, again);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no partial file left");
        assert!(LIBRARY.starts_with(b"\x7fELF"));
    }
}
