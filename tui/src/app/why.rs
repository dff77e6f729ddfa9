//! Why it hangs, in the UI: `w` goes to the ranks the verdict names (again: the next of
//! them) with its answer on the message line; `W` shows the whole "Why it hangs"
//! paragraph. On a live job the variables the verdict needs (the peers and communicators
//! of the calls the ranks are blocked in) are read first, once per result, as `strata
//! attach` reads them.

use super::{App, Dialog};
use strata_filters::taskset::format_set_shortened;
use strata_progress::source::SourceIndex;
use strata_verdict::Verdict;

impl App {
    /// The verdict on the current result, computed when first asked for.
    pub(super) fn verdict(&mut self) -> &Verdict {
        if self.verdict.is_none() {
            if self.source.live() {
                self.read_verdict_variables();
            }
            let mut sources = SourceIndex::new(self.state.source_dirs.clone());
            self.verdict = Some(Verdict::of(
                &self.result,
                &mut sources,
                self.progress.as_ref(),
            ));
        }
        self.verdict.as_ref().expect("just computed")
    }

    /// Reads the variables the verdict needs that the result does not hold yet.
    fn read_verdict_variables(&mut self) {
        let mut sources = SourceIndex::new(self.state.source_dirs.clone());
        let requests = Verdict::requests(&self.result, &mut sources);
        if let Err(e) = self.read_missing(requests, true) {
            self.error(format!("reading the calls' peers: {e}"));
        }
    }

    /// `w`: selects where the next ranks the verdict names end, and says the answer.
    pub(super) fn why(&mut self) {
        let cursor = self.why_cursor;
        let verdict = self.verdict();
        let decision = &verdict.decision;
        let summary = decision.summary.clone();
        let culprits = decision.culprits.clone();
        if culprits.is_empty() {
            self.why_cursor = None;
            self.info(format!("why it hangs: {summary} · W: details"));
            return;
        }
        let i = cursor.map_or(0, |c| (c + 1) % culprits.len());
        self.why_cursor = Some(i);
        let c = &culprits[i];
        let at =
            c.at.as_ref()
                .map(|p| format!(" at {}", p.short()))
                .unwrap_or_default();
        let found = self.display.ending_nodes(&c.set).first().copied();
        match found {
            Some(node) => self.select(node),
            None => {
                self.error(format!(
                    "ranks [{}] are not in this view (F unfocuses, u undoes)",
                    c.ranks
                ));
                return;
            }
        }
        let which = if culprits.len() > 1 {
            format!(" · {}/{} (w: next)", i + 1, culprits.len())
        } else {
            String::new()
        };
        self.info(format!(
            "why: [{}] {}{at}{which} · {summary} · W: details",
            format_set_shortened(&c.set, 40),
            c.doing
        ));
    }

    /// `W`: the verdict's paragraph, as `strata attach` prints it after the tree.
    pub(super) fn why_dialog(&mut self) {
        let verdict = self.verdict();
        let text = verdict.paragraph(200);
        self.dialog = Some(Dialog::text(
            "why it hangs".to_string(),
            text.lines().map(String::from).collect(),
        ));
    }
}
