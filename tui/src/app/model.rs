//! The runtime model in the UI: `a` goes to the ranks the ranks' MPI histories single out
//! (the least progressed, then the abnormal ones: standing out from their nearest
//! neighbour, a behaviour apart, an outlier of their behaviour), again: the next of them,
//! with the evidence on the message line. It is the verdict's model, the one `W` shows
//! under "MPI histories".

use super::App;

impl App {
    /// `a`: selects where the next ranks the runtime model singles out end.
    pub(super) fn singled_out(&mut self) {
        let cursor = self.model_cursor;
        let findings = match &self.verdict().runtime {
            Some(model) => model.findings(40),
            None => {
                self.model_cursor = None;
                self.info(
                    "no MPI histories in this result: run the job under `strata run` (it \
                     preloads strata's PMPI library), then attach"
                        .to_string(),
                );
                return;
            }
        };
        if findings.is_empty() {
            self.model_cursor = None;
            self.info(
                "MPI histories: no rank behind the others or unlike them · W: details".to_string(),
            );
            return;
        }
        let i = cursor.map_or(0, |c| (c + 1) % findings.len());
        self.model_cursor = Some(i);
        let f = &findings[i];
        match self.display.ending_nodes(&f.ranks).first().copied() {
            Some(node) => self.select(node),
            None => {
                self.error(format!(
                    "{} ranks are not in this view (F unfocuses, u undoes): {}",
                    f.kind, f.evidence
                ));
                return;
            }
        }
        let which = if findings.len() > 1 {
            format!(" · {}/{} (a: next)", i + 1, findings.len())
        } else {
            String::new()
        };
        self.info(format!("{}: {}{which}", f.kind, f.evidence));
    }
}
