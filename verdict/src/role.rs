//! What a rank is to the rules of the verdict: moving, outside MPI, waiting in a
//! point-to-point call or a collective, finished, or not seen.

use crate::mpi_call::CallKind;
use crate::observe::{Activity, Motion, RankState};

/// What a rank is, for the rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Moving,
    StillOutside,
    WaitingPointToPoint,
    WaitingCollective,
    Finished,
    Unseen,
}

pub(crate) fn role(s: &RankState) -> Role {
    if matches!(s.motion, Motion::Changed | Motion::MadeCalls) {
        return Role::Moving;
    }
    match &s.activity {
        Activity::Exited => Role::Finished,
        Activity::Outside { .. } => Role::StillOutside,
        Activity::InMpi { call, .. } => match call.kind {
            CallKind::InitFinalize if call.name == "MPI_Finalize" => Role::Finished,
            // MPI_Init and MPI_Init_thread wait for every rank of the job.
            CallKind::Collective | CallKind::InitFinalize => Role::WaitingCollective,
            // A fence is collective over the window's group.
            CallKind::OneSided if call.name == "MPI_Win_fence" => Role::WaitingCollective,
            // Seen in the same call sample after sample, a call that returns at once
            // (MPI_Iprobe, MPI_Test) is a polling loop: a wait all the same.
            CallKind::PointToPoint | CallKind::Completion | CallKind::OneSided => {
                Role::WaitingPointToPoint
            }
            CallKind::Other => Role::StillOutside,
        },
        Activity::Uninterruptible | Activity::NotSampled { .. } => Role::Unseen,
    }
}
