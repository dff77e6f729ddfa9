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
            let analyses = Analyses::new(
                &result,
                progress_order(&args.show, &result),
                &args.show.source_dir,
            );
            write_files(&result, dir, &analyses)?;
        }
        let state = crate::commands::show::view_state(&args.show);
        let color = color_on(args.show.color, true);
        let last = strata_tui::run(result, Box::new(strata_tui::Saved), state, color)?;
        return Ok(Exit::of_result(&last));
    }
    let analyses = show(&result, &args.show)?;
    if let Some(dir) = args.output {
        write_files(&result, &dir, &analyses)?;
    }
    Ok(Exit::of_result(&result))
}
