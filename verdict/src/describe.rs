//! What ranks do, in words: the phrases the answer, its evidence and the graph share.

use crate::arguments::{CallArguments, Communicator, Peer};
use crate::mpi_call::Place;
use crate::observe::{Activity, Motion, RankState};

/// What ranks in state `s` do, in a few words, and where.
pub(crate) fn doing(s: &RankState) -> (String, Option<Place>) {
    let handler = if s.in_signal_handler {
        " in a signal handler"
    } else {
        ""
    };
    match &s.activity {
        Activity::InMpi { call, call_site } => {
            (format!("in {}{handler}", call.name), call_site.clone())
        }
        Activity::Outside { at, innermost } => {
            let function = at
                .as_ref()
                .and_then(|p| p.function.clone())
                .unwrap_or_else(|| innermost.clone());
            let mut what = format!("outside MPI{handler} in {function}");
            if at.as_ref().and_then(|p| p.function.as_deref()) != Some(innermost.as_str()) {
                what.push_str(&format!(" ({innermost})"));
            }
            (what, at.clone())
        }
        Activity::Exited => ("exited".to_string(), None),
        Activity::Uninterruptible => ("in uninterruptible sleep".to_string(), None),
        Activity::NotSampled { why } => (format!("not sampled ({why})"), None),
    }
}

/// [`doing`], with the call's peers and communicator where they are known.
pub(crate) fn doing_with_peers(
    s: &RankState,
    args: Option<&CallArguments>,
) -> (String, Option<Place>) {
    let (mut what, at) = doing(s);
    let Some(args) = args else {
        return (what, at);
    };
    let peer = |p: &Peer| match p {
        Peer::Unknown(_) => None,
        other => Some(other.describe()),
    };
    if let Some(p) = args.source.as_ref().and_then(peer) {
        what.push_str(&format!(" from {p}"));
    }
    if let Some(p) = args.destination.as_ref().and_then(peer) {
        what.push_str(&format!(" to {p}"));
    }
    if let Some(p) = args.root.as_ref().and_then(peer) {
        what.push_str(&format!(" (root {p})"));
    }
    if let Some(r) = args.requests.as_ref().filter(|r| !r.recorded.is_empty()) {
        what.push_str(&format!(" on {}", r.describe()));
    }
    match &args.communicator {
        // A point-to-point call on a known communicator says nothing more than its peers.
        Some(c @ (Communicator::World | Communicator::Itself | Communicator::Members(_)))
            if args.source.is_none() && args.destination.is_none() =>
        {
            what.push_str(&format!(" on {}", c.describe()));
        }
        Some(c @ Communicator::Other(_)) => what.push_str(&format!(" on {}", c.describe())),
        _ => {}
    }
    (what, at)
}

/// `[ranks] what at file:line, motion`: one state, as evidence.
pub(crate) fn seen_line(ranks: String, s: &RankState) -> String {
    let (what, at) = doing(s);
    let place = at.map(|p| format!(" at {}", p.short())).unwrap_or_default();
    let motion = match s.motion {
        Motion::Unchanged => "unchanged in every sample",
        Motion::Changed => "moved between samples",
        Motion::OneSample => "sampled once",
        Motion::PartlySeen => "unchanged where seen, some samples unread",
        Motion::MadeCalls => "made MPI calls between samples (its stack looked the same)",
    };
    format!("[{ranks}] {what}{place}, {motion}")
}
