//! Task discovery on this node (issue 3): by PIDs, by launcher PID, by Slurm job and step.
