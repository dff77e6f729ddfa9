//! Launching daemons and commnodes through a resource manager (local processes, Slurm,
//! later Flux, PBS, LSF).
//!
//! Not built yet: the local launcher arrives with issue 5, Slurm with issue 6.
