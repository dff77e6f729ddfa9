//! `strata view`: a saved result, in the terminal UI on a terminal, printed otherwise.

use super::show::{Analyses, color_on, progress_order, show, write_files};
use crate::cli::ViewArgs;
use crate::exit::Exit;
use crate::failure::Failure;
use std::io::IsTerminal;
use strata_result::StrataResult;

pub fn run(args: ViewArgs) -> Result<Exit, Failure> {
    let result = StrataResult::read(&args.result)?;
    // The interactive view needs a terminal on both ends; a format asked for by name, a
    // pipe or a file get printed output, as scripts expect.
    let interactive = !args.print
        && args.show.format.is_none()
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    if interactive {
        if let Some(dir) = &args.output {
            let mut analyses = Analyses::new(
                &result,
                progress_order(&args.show, &result),
                &args.show.source_dir,
            );
            // --redact holds for the report in the files as for `-f html`.
            analyses.report.redact = args.show.redact;
            write_files(&result, dir, &analyses)?;
        }
        let state = crate::commands::show::view_state(&args.show);
        let color = color_on(args.show.color, true);
        let last = strata_tui::run(result, Box::new(strata_tui::Saved), state, color)?;
        return Ok(Exit::of_result(&last));
    }
    let (analyses, html) = show(&result, &args.show)?;
    match (html, args.output) {
        // `-f html -o FILE`: the report alone, where asked.
        (Some(_), Some(path)) => write_report(&result, &analyses, &path)?,
        (Some(_), None) => super::show::write_stdout(&analyses.html(&result))?,
        (None, Some(dir)) => {
            write_files(&result, &dir, &analyses)?;
        }
        (None, None) => {}
    }
    Ok(Exit::of_result(&result))
}

/// Writes the HTML report to `path`, or to `report.html` in it when it is a directory.
fn write_report(
    result: &StrataResult,
    analyses: &Analyses,
    path: &std::path::Path,
) -> Result<(), Failure> {
    let path = if path.is_dir() {
        path.join(strata_report::FILE)
    } else {
        path.to_path_buf()
    };
    std::fs::write(&path, analyses.html(result)).map_err(|e| {
        Failure::new(
            Exit::BadInput,
            format!("cannot write the report to {}: {e}", path.display()),
        )
    })?;
    eprintln!("strata: wrote the report to {}", path.display());
    Ok(())
}
