//! ptrace capture of a task's threads (issue 3).
