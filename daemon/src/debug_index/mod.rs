//! Debug indexes: each binary's debug information read and indexed once, then kept in a
//! compact file that any daemon of any job on any node can look addresses up in without
//! reading the DWARF again.
//!
//! The 208K paper ("Lessons Learned at 208K: Towards Debugging Millions of Cores", 2008)
//! found that every daemon reading the same binaries and debug files from the shared file
//! system made sampling grow with the job. Loading libc's separate debug file costs a
//! daemon tens of milliseconds (decompressing sections, addr2line's unit index) and all
//! of the file's megabytes; the index of what symbolization needs from it (functions,
//! the inlined-call tree, line rows, the debug file's symbol table) is read in one piece,
//! checked by a CRC, and looked up in place.
//!
//! - [`build`]: DWARF to index, agreeing with addr2line frame for frame.
//! - [`index`]: an opened index and its lookups.
//! - [`format`](mod@format): the byte layout.
//! - [`cache`]: the directory of indexes keyed by build-id, safe for concurrent daemons.
//! - [`detached`]: the builder of large binaries' indexes, in a process of its own.

pub mod build;
pub mod cache;
pub mod detached;
pub mod format;
pub mod index;

pub use cache::{IndexCache, Lookup};
pub use index::{DebugIndex, Input, Meta, RawFrame};
