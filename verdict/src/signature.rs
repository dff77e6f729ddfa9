//! Which argument of a blocking MPI call names a peer, a root or the communicator: the
//! positions of the MPI standard's C and Fortran bindings (the same in both; Fortran adds
//! `ierror` at the end) and the keywords of the 2008 bindings (`source=`, `dest=`,
//! `root=`, `comm=`).
//!
//! Only calls that wait for other ranks are here. Calls that start an operation
//! (`MPI_Isend`) return at once, and the completion calls (`MPI_Wait`) take requests, whose
//! peers only the MPI library knows.

/// One argument: its position (0-based) and its Fortran 2008 keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub position: usize,
    pub keyword: &'static str,
}

/// The arguments of one call that matter to the wait-for graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Signature {
    pub source: Option<Slot>,
    pub destination: Option<Slot>,
    pub root: Option<Slot>,
    pub communicator: Option<Slot>,
}

const fn slot(position: usize, keyword: &'static str) -> Option<Slot> {
    Some(Slot { position, keyword })
}

const fn comm(position: usize) -> Option<Slot> {
    slot(position, "comm")
}

/// A collective on the communicator at `position`.
const fn collective(position: usize) -> Signature {
    Signature {
        source: None,
        destination: None,
        root: None,
        communicator: comm(position),
    }
}

/// A rooted collective: root and communicator.
const fn rooted(root: usize, communicator: usize) -> Signature {
    Signature {
        source: None,
        destination: None,
        root: slot(root, "root"),
        communicator: comm(communicator),
    }
}

const fn receive(source: usize, communicator: usize) -> Signature {
    Signature {
        source: slot(source, "source"),
        destination: None,
        root: None,
        communicator: comm(communicator),
    }
}

const fn send(destination: usize, communicator: usize) -> Signature {
    Signature {
        source: None,
        destination: slot(destination, "dest"),
        root: None,
        communicator: comm(communicator),
    }
}

/// The signature of the MPI call with C name `call` (`MPI_Recv`), if it waits for other
/// ranks.
pub fn signature(call: &str) -> Option<Signature> {
    let base = call.strip_prefix("MPI_")?;
    Some(match base {
        // Point to point: (buf, count, type, peer, tag, comm, ...).
        "Recv" => receive(3, 5),
        "Send" | "Ssend" | "Bsend" | "Rsend" => send(3, 5),
        // (source, tag, comm, ...): a probe polled in a loop waits the same way.
        "Probe" | "Iprobe" | "Mprobe" | "Improbe" => receive(0, 2),
        "Sendrecv" => Signature {
            source: slot(8, "source"),
            destination: slot(3, "dest"),
            root: None,
            communicator: comm(10),
        },
        "Sendrecv_replace" => Signature {
            source: slot(5, "source"),
            destination: slot(3, "dest"),
            root: None,
            communicator: comm(7),
        },
        "Barrier" => collective(0),
        "Bcast" => rooted(3, 4),
        "Reduce" => rooted(5, 6),
        "Gather" | "Scatter" => rooted(6, 7),
        "Gatherv" | "Scatterv" => rooted(7, 8),
        "Allreduce" | "Reduce_scatter" | "Reduce_scatter_block" | "Scan" | "Exscan" => {
            collective(5)
        }
        "Allgather" | "Alltoall" => collective(6),
        "Allgatherv" => collective(7),
        "Alltoallv" | "Alltoallw" => collective(8),
        "Comm_split" | "Comm_dup" | "Comm_create" | "Comm_split_type" | "Comm_free"
        | "Cart_create" | "Comm_idup" => collective(0),
        "Win_create" => collective(5),
        "Win_allocate" | "Win_allocate_shared" => collective(4),
        "Win_create_dynamic" => collective(1),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_and_communicators_sit_where_the_standard_puts_them() {
        let recv = signature("MPI_Recv").unwrap();
        assert_eq!(recv.source.map(|s| s.position), Some(3));
        assert_eq!(recv.communicator.map(|s| s.position), Some(5));
        let sendrecv = signature("MPI_Sendrecv").unwrap();
        assert_eq!(
            (
                sendrecv.destination.map(|s| s.position),
                sendrecv.source.map(|s| s.position)
            ),
            (Some(3), Some(8))
        );
        let bcast = signature("MPI_Bcast").unwrap();
        assert_eq!(bcast.root.map(|s| s.keyword), Some("root"));
        assert_eq!(signature("MPI_Barrier").unwrap().communicator, comm(0));
        assert_eq!(signature("MPI_Wait"), None, "requests: the library knows");
        assert_eq!(signature("PMPI_Recv"), None, "C names only");
    }
}
