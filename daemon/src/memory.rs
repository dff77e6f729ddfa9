//! Reading a target's memory behind a trait, so that unwinding (and later variable reads)
//! run the same way on a live process, on a recorded snapshot and, later, on a core file.
//!
//! Like framehop's memory closure and py-spy's `ProcessMemory`, the algorithms never touch
//! `/proc` or ptrace themselves: they get a `&dyn MemoryReader`.

use std::fmt;
use std::fs::File;
use std::io::IoSliceMut;
use std::os::unix::fs::FileExt;

use nix::sys::uio::{RemoteIoVec, process_vm_readv};
use nix::unistd::Pid as NixPid;

use crate::procfs::Pid;

/// A read that could not be satisfied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {len} bytes at {addr:#x}")]
pub struct MemoryError {
    pub addr: u64,
    pub len: usize,
}

/// Random access to a target's address space.
pub trait MemoryReader {
    /// Fills `buf` with the bytes at `addr`, entirely or not at all.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemoryError>;

    /// A little-endian `u64` at `addr` (x86-64 is the only target so far).
    fn read_u64(&self, addr: u64) -> Result<u64, MemoryError> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
}

impl<T: MemoryReader + ?Sized> MemoryReader for &T {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemoryError> {
        (**self).read(addr, buf)
    }
}

/// A live process's memory: `process_vm_readv`, falling back to `/proc/PID/mem` (which also
/// reads pages the target mapped without read permission, such as some guard regions, and
/// works where `process_vm_readv` is filtered by a seccomp policy).
///
/// Reads of a running process are not atomic with respect to it: use it on a stopped (held)
/// task, or for memory that does not change (code, `.eh_frame`, the vdso).
pub struct ProcessMemory {
    pid: Pid,
    /// Opened on the first read that `process_vm_readv` cannot serve: most readers never
    /// need it, and the sampler makes one reader per task and sample.
    mem: std::sync::OnceLock<Option<File>>,
}

impl fmt::Debug for ProcessMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessMemory")
            .field("pid", &self.pid)
            .finish()
    }
}

impl ProcessMemory {
    pub fn new(pid: Pid) -> ProcessMemory {
        ProcessMemory {
            pid,
            mem: std::sync::OnceLock::new(),
        }
    }

    pub fn pid(&self) -> Pid {
        self.pid
    }
}

impl MemoryReader for ProcessMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemoryError> {
        let err = MemoryError {
            addr,
            len: buf.len(),
        };
        if buf.is_empty() {
            return Ok(());
        }
        let len = buf.len();
        let remote = [RemoteIoVec {
            base: addr as usize,
            len,
        }];
        if let Ok(n) = process_vm_readv(
            NixPid::from_raw(self.pid),
            &mut [IoSliceMut::new(buf)],
            &remote,
        ) && n == len
        {
            return Ok(());
        }
        // Opening /proc/PID/mem needs ptrace access (as process_vm_readv does); failing to
        // open it leaves process_vm_readv as the only route.
        let mem = self
            .mem
            .get_or_init(|| File::open(format!("/proc/{}/mem", self.pid)).ok())
            .as_ref()
            .ok_or(err)?;
        match mem.read_exact_at(buf, addr) {
            Ok(()) => Ok(()),
            Err(_) => Err(err),
        }
    }
}

/// A copy of part of a task's memory taken while it was stopped (a thread's stack from its
/// stack pointer up): the recorded snapshot that unwinding reads after the task runs again.
#[derive(Clone, PartialEq, Eq)]
pub struct MemoryCopy {
    /// Address of `bytes[0]` in the target.
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl fmt::Debug for MemoryCopy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MemoryCopy({:#x}..{:#x})",
            self.base,
            self.base + self.bytes.len() as u64
        )
    }
}

impl MemoryCopy {
    pub fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    pub fn contains(&self, addr: u64, len: usize) -> bool {
        addr >= self.base
            && addr
                .checked_add(len as u64)
                .is_some_and(|end| end <= self.end())
    }
}

impl MemoryReader for MemoryCopy {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemoryError> {
        if !self.contains(addr, buf.len()) {
            return Err(MemoryError {
                addr,
                len: buf.len(),
            });
        }
        let at = (addr - self.base) as usize;
        buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
        Ok(())
    }
}

/// Several copies (a thread's stack, an alternate signal stack, ...), tried in order.
impl MemoryReader for [MemoryCopy] {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemoryError> {
        self.iter()
            .find(|c| c.contains(addr, buf.len()))
            .ok_or(MemoryError {
                addr,
                len: buf.len(),
            })?
            .read(addr, buf)
    }
}

/// Reads from `first`, and from `second` what `first` does not have (a stack copy over the
/// live process, say).
#[derive(Debug)]
pub struct Layered<A, B> {
    pub first: A,
    pub second: B,
}

impl<A: MemoryReader, B: MemoryReader> MemoryReader for Layered<A, B> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemoryError> {
        self.first
            .read(addr, buf)
            .or_else(|_| self.second.read(addr, buf))
    }
}

/// The general-purpose registers of an x86-64 thread, indexed by DWARF register number
/// (the numbering CFI and location expressions use): 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi,
/// 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15, 16 the return address (rip).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Registers {
    pub values: [u64; Registers::COUNT],
    /// `fs_base`: the thread pointer, needed later to read thread-local variables.
    pub fs_base: u64,
}

impl Registers {
    pub const COUNT: usize = 17;
    pub const RBX: u16 = 3;
    pub const RBP: u16 = 6;
    pub const RSP: u16 = 7;
    pub const RIP: u16 = 16;

    pub fn ip(&self) -> u64 {
        self.values[Self::RIP as usize]
    }
    pub fn sp(&self) -> u64 {
        self.values[Self::RSP as usize]
    }
    pub fn bp(&self) -> u64 {
        self.values[Self::RBP as usize]
    }

    /// From ptrace's `user_regs_struct`.
    pub fn from_user_regs(r: &libc::user_regs_struct) -> Registers {
        Registers {
            values: [
                r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8, r.r9, r.r10, r.r11,
                r.r12, r.r13, r.r14, r.r15, r.rip,
            ],
            fs_base: r.fs_base,
        }
    }

    /// The DWARF name of a register number, for messages.
    pub fn name(reg: u16) -> &'static str {
        const NAMES: [&str; Registers::COUNT] = [
            "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
            "r12", "r13", "r14", "r15", "rip",
        ];
        NAMES.get(reg as usize).copied().unwrap_or("?")
    }
}

impl fmt::Debug for Registers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        for (i, v) in self.values.iter().enumerate() {
            m.entry(&Registers::name(i as u16), &format_args!("{v:#x}"));
        }
        m.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_read_inside_and_refuse_outside() {
        let c = MemoryCopy {
            base: 0x1000,
            bytes: (0..32u8).collect(),
        };
        assert_eq!(
            c.read_u64(0x1000).unwrap(),
            u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7])
        );
        assert_eq!(c.read_u64(0x1018).unwrap() & 0xff, 24);
        assert!(c.read_u64(0x1019).is_err());
        assert!(c.read_u64(0xff8).is_err());
        assert!(c.read_u64(u64::MAX - 3).is_err());
        let both = [
            c.clone(),
            MemoryCopy {
                base: 0x5000,
                bytes: vec![9; 8],
            },
        ];
        assert_eq!(
            both[..].read_u64(0x5000).unwrap(),
            u64::from_le_bytes([9; 8])
        );
        let layered = Layered {
            first: c,
            second: MemoryCopy {
                base: 0x0,
                bytes: vec![7; 0x2000],
            },
        };
        assert_eq!(layered.read_u64(0x1000).unwrap() & 0xff, 0);
        assert_eq!(layered.read_u64(0x1100).unwrap() & 0xff, 7);
    }

    #[test]
    fn reads_own_process() {
        let value: u64 = 0x1122_3344_5566_7788;
        let me = ProcessMemory::new(std::process::id() as Pid);
        let addr = &value as *const u64 as u64;
        assert_eq!(me.read_u64(addr).unwrap(), value);
        assert!(me.read_u64(8).is_err());
    }
}
