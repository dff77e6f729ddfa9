//! The places of the ranks' MPI call sites (the call, its function, file and line), sent
//! once per subtree rather than once per rank.
//!
//! Every rank of a program calls MPI at the same few dozen sites, and each site's place
//! carries the source file's path: in the ranks' histories it was most of the bytes that
//! are not counts and times. A daemon moves its tasks' places into a table of its reply
//! ([`intern`]); a commnode merges its children's tables into one as it merges their notes
//! ([`Places::absorb`]), so a place goes up the tree once per subtree, the way the trees'
//! frames do; the root puts the places back into the notes before it reads them
//! ([`inline`]). A call in the history's last calls that names its site leaves its call's
//! name to the site's place the same way. AutomaDeD merges its tasks' models on their way to the root for the
//! same reason ("Large scale debugging of parallel tasks with AutomaDeD", 2011).

use std::collections::HashMap;
use strata_proto::overlay::{PmpiHistoryNote, PmpiPlaceNote, PmpiSiteNote, SampleReply, TaskNote};

type Key = (String, Option<String>, Option<String>, Option<u32>);

/// A table of places being built, each once.
#[derive(Debug, Default)]
pub struct Places {
    table: Vec<PmpiPlaceNote>,
    index: HashMap<Key, u32>,
}

fn histories_mut(notes: &mut [TaskNote]) -> impl Iterator<Item = &mut PmpiHistoryNote> {
    notes
        .iter_mut()
        .filter_map(|n| n.pmpi.as_mut()?.history.as_mut())
}

fn sites_mut(notes: &mut [TaskNote]) -> impl Iterator<Item = &mut PmpiSiteNote> {
    histories_mut(notes).flat_map(|h| h.sites.iter_mut())
}

/// The call made at each site of `h`, by the site's index.
fn calls_by_site(h: &PmpiHistoryNote) -> HashMap<u32, String> {
    h.sites.iter().map(|s| (s.index, s.call.clone())).collect()
}

impl Places {
    /// Moves the places of `notes`' sites into this table: those written in the site (a
    /// daemon's), and those that name one of `table` (a child's table, checked by
    /// [`check`]). Each site then names its place in this table.
    pub fn absorb(&mut self, notes: &mut [TaskNote], table: &[PmpiPlaceNote]) {
        let mut remap: Vec<Option<u32>> = vec![None; table.len()];
        for site in sites_mut(notes) {
            site.place = match site.place {
                None => Some(self.add(PmpiPlaceNote {
                    call: std::mem::take(&mut site.call),
                    function: site.function.take(),
                    file: site.file.take(),
                    line: site.line.take(),
                })),
                Some(i) => {
                    let Some(place) = table.get(i as usize) else {
                        // Refused by `check` before: nothing to name.
                        site.place = None;
                        continue;
                    };
                    let slot = &mut remap[i as usize];
                    Some(*slot.get_or_insert_with(|| self.add(place.clone())))
                }
            };
        }
    }

    fn add(&mut self, place: PmpiPlaceNote) -> u32 {
        let key = (
            place.call.clone(),
            place.function.clone(),
            place.file.clone(),
            place.line,
        );
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.table.len() as u32;
        self.table.push(place);
        self.index.insert(key, i);
        i
    }

    pub fn into_table(self) -> Vec<PmpiPlaceNote> {
        self.table
    }
}

/// Moves `reply`'s places into its table (a daemon's reply, before it is sent).
pub fn intern(reply: &mut SampleReply) {
    for h in histories_mut(&mut reply.notes) {
        let calls = calls_by_site(h);
        for e in &mut h.events {
            if e.site.and_then(|s| calls.get(&s)) == Some(&e.call) {
                e.call.clear();
            }
        }
    }
    let table = std::mem::take(&mut reply.pmpi_places);
    let mut places = Places::default();
    places.absorb(&mut reply.notes, &table);
    reply.pmpi_places = places.into_table();
}

/// An error when a site of `reply` names a place its table does not have (untrusted input,
/// checked before the reply is merged).
pub fn check(reply: &SampleReply) -> Result<(), String> {
    let places = reply.pmpi_places.len();
    let bad = reply
        .notes
        .iter()
        .filter_map(|n| n.pmpi.as_ref()?.history.as_ref())
        .flat_map(|h| h.sites.iter())
        .any(|s| s.place.is_some_and(|p| p as usize >= places));
    if bad {
        return Err(format!(
            "sent an MPI call site whose place is not among its {places}"
        ));
    }
    Ok(())
}

/// Puts the places of `reply`'s table back into its sites and empties the table (at the
/// root, before the notes are read). A site whose place is not in the table keeps none.
pub fn inline(reply: &mut SampleReply) {
    let table = std::mem::take(&mut reply.pmpi_places);
    for site in sites_mut(&mut reply.notes) {
        if let Some(place) = site.place.take().and_then(|i| table.get(i as usize)) {
            site.call = place.call.clone();
            site.function = place.function.clone();
            site.file = place.file.clone();
            site.line = place.line;
        }
    }
    for h in histories_mut(&mut reply.notes) {
        let calls = calls_by_site(h);
        for e in h.events.iter_mut().filter(|e| e.call.is_empty()) {
            if let Some(call) = e.site.and_then(|s| calls.get(&s)) {
                e.call = call.clone();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_proto::overlay::{PmpiEventNote, PmpiNote};

    fn site(index: u32, call: &str, line: u32) -> PmpiSiteNote {
        PmpiSiteNote {
            index,
            call: call.into(),
            address: 0x1000 + u64::from(index),
            function: Some("main".into()),
            file: Some("/home/user/src/halo.c".into()),
            line: Some(line),
            entered: 10,
            completed: 10,
            ..PmpiSiteNote::default()
        }
    }

    fn note(sites: Vec<PmpiSiteNote>) -> TaskNote {
        // Its last calls: one at each site, and one whose site was not recorded.
        let mut events: Vec<PmpiEventNote> = sites
            .iter()
            .map(|s| PmpiEventNote {
                call: s.call.clone(),
                site: Some(s.index),
                ..PmpiEventNote::default()
            })
            .collect();
        events.push(PmpiEventNote {
            call: "MPI_Finalize".into(),
            ..PmpiEventNote::default()
        });
        TaskNote {
            pmpi: Some(PmpiNote {
                history: Some(PmpiHistoryNote {
                    sites,
                    events,
                    ..PmpiHistoryNote::default()
                }),
                ..PmpiNote::default()
            }),
            ..TaskNote::default()
        }
    }

    fn reply(notes: Vec<TaskNote>) -> SampleReply {
        SampleReply {
            notes,
            ..SampleReply::default()
        }
    }

    #[test]
    fn places_travel_once_and_come_back_whole() {
        let a = reply(vec![
            note(vec![site(0, "MPI_Irecv", 30), site(1, "MPI_Waitall", 41)]),
            note(vec![site(0, "MPI_Irecv", 30), site(1, "MPI_Waitall", 41)]),
            TaskNote::default(),
        ]);
        // Another daemon's ranks: the same places, in another order, and one of their own.
        let b = reply(vec![note(vec![
            site(0, "MPI_Waitall", 41),
            site(1, "MPI_Barrier", 50),
            site(2, "MPI_Irecv", 30),
        ])]);
        let original: Vec<TaskNote> = a.notes.iter().chain(&b.notes).cloned().collect();
        let (mut a, mut b) = (a, b);
        intern(&mut a);
        intern(&mut b);
        assert_eq!(a.pmpi_places.len(), 2);
        assert_eq!(b.pmpi_places.len(), 3);
        check(&a).unwrap();
        check(&b).unwrap();
        let sent = a.notes[0].pmpi.as_ref().unwrap().history.as_ref().unwrap();
        assert!(
            sent.sites
                .iter()
                .all(|s| s.call.is_empty() && s.file.is_none())
        );
        let calls: Vec<&str> = sent.events.iter().map(|e| e.call.as_str()).collect();
        assert_eq!(calls, ["", "", "MPI_Finalize"]);
        // A commnode merges the two.
        let mut places = Places::default();
        let mut merged = SampleReply::default();
        for mut child in [a, b] {
            places.absorb(&mut child.notes, &child.pmpi_places);
            merged.notes.extend(child.notes);
        }
        merged.pmpi_places = places.into_table();
        assert_eq!(merged.pmpi_places.len(), 3, "{:?}", merged.pmpi_places);
        check(&merged).unwrap();
        inline(&mut merged);
        assert!(merged.pmpi_places.is_empty());
        assert_eq!(merged.notes, original);
    }

    #[test]
    fn a_place_outside_the_table_is_refused() {
        let mut r = reply(vec![note(vec![site(0, "MPI_Recv", 7)])]);
        intern(&mut r);
        r.pmpi_places.clear();
        let err = check(&r).unwrap_err();
        assert!(err.contains("not among its 0"), "{err}");
    }
}
