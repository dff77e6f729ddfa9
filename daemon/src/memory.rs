//! Reading a target's memory behind a trait, so unwinding can run on live processes and on
//! recorded snapshots alike (issue 3).
