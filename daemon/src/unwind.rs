//! The x86-64 stack unwinder: from a thread's registers and a copy of its stack to the list
//! of frames, each with the registers recovered in it.
//!
//! Design constraints:
//! - Pure: no I/O but reads through a `&dyn MemoryReader` (a stack copy layered over the
//!   live process, a recorded snapshot, later a core file) and lookups in an
//!   [`AddressSpace`] of already parsed images. Capture stops the thread only long enough
//!   to copy registers and stack; unwinding happens afterwards, from the copy.
//! - Our own CFI evaluation on gimli rather than framehop: framehop recovers only
//!   ip/sp/bp, but reading variables (`--var`, the loop-order variables of `--progress`)
//!   evaluates DWARF variable locations in any frame, which needs that frame's callee-saved
//!   registers. So every frame carries a full [`Registers`] and a mask of which of them are
//!   known.
//! - Lookups use the return address - 1 (the call instruction, which may be the last of
//!   its function) except in the innermost frame and in the frame a signal interrupted,
//!   whose pc is the instruction that was about to run, and in a signal trampoline, which
//!   the handler "returns" to at its first instruction (as eu-stack does).
//! - Signal frames: glibc's `__restore_rt` has CFI with the `S` augmentation whose rules
//!   are expressions reading the `ucontext_t` on the stack; a trampoline without CFI (musl,
//!   hand-written) is recognised by its code bytes and the registers are read from the
//!   `ucontext_t` directly ([`registers_from_sigframe`]).
//! - Without CFI (JIT code, images that could not be loaded): the frame-pointer chain, and
//!   in the innermost frame a return address at `[sp]`. Garbage walks are stopped: the
//!   stack pointer must grow (except across a signal frame, which may switch stacks), a
//!   return address must be in an executable mapping, no (pc, sp) twice, `max_frames`.
//! - It runs for every thread of every rank at every sample: the gimli `UnwindContext` is
//!   reused (one per OS thread), FDE tables live in the cached [`Image`], and nothing is
//!   allocated per frame but the output frame and, rarely, an expression evaluation.
//! - Never panics on bad memory or bad CFI: the walk ends with [`WalkEnd::Error`].

use std::cell::RefCell;
use std::fmt;
use std::sync::OnceLock;

use gimli::{
    BaseAddresses, CfaRule, DebugFrame, EhFrame, EhFrameHdr, EndianSlice, Evaluation,
    EvaluationResult, Expression, FrameDescriptionEntry, LittleEndian, Location, Register,
    RegisterRule, UnwindContext, UnwindOffset, UnwindSection, UnwindTableRow, Value,
};

use crate::images::{AddressSpace, FdeEntry, Image, MappedImage};
use crate::memory::{MemoryError, MemoryReader, Registers};

type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// Which of the 17 registers of a frame are known (bit `n` for DWARF register `n`).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct KnownRegs(pub u32);

impl KnownRegs {
    pub const ALL: KnownRegs = KnownRegs((1 << Registers::COUNT) - 1);

    pub fn contains(self, reg: u16) -> bool {
        (reg as usize) < Registers::COUNT && self.0 & (1 << reg) != 0
    }

    pub fn insert(&mut self, reg: u16) {
        if (reg as usize) < Registers::COUNT {
            self.0 |= 1 << reg;
        }
    }
}

impl fmt::Debug for KnownRegs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(
                (0..Registers::COUNT as u16)
                    .filter(|&r| self.contains(r))
                    .map(Registers::name),
            )
            .finish()
    }
}

/// What a frame is, which decides how its pc is looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// The frame the thread was stopped in: pc is the next instruction.
    Innermost,
    /// A caller: pc is a return address, looked up at pc - 1.
    Call,
    /// The sigreturn trampoline a signal handler returns to (`__restore_rt`): pc is its
    /// first instruction, looked up as is.
    SignalHandlerTrampoline,
    /// The frame a signal interrupted: pc is the interrupted instruction, looked up as is.
    SignalInterrupted,
}

/// How a frame's registers were recovered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// The innermost frame: the captured registers themselves.
    Captured,
    /// By the callee's call frame information (`.eh_frame` or `.debug_frame`).
    Cfi,
    /// From the callee's frame pointer chain: only rip, rsp and rbp are known.
    FramePointer,
    /// The innermost frame had neither CFI nor a frame pointer: return address at `[sp]`.
    StackScan,
    /// From the `ucontext_t` a signal trampoline without CFI returns to.
    SignalContext,
}

/// One frame of an unwound stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnwoundFrame {
    /// The innermost frame's rip, else the return address (or interrupted pc).
    pub pc: u64,
    /// The address looked up for CFI and symbols: `pc`, or `pc - 1` for a [`FrameKind::Call`].
    pub lookup_pc: u64,
    pub kind: FrameKind,
    pub how: Recovery,
    /// This frame's canonical frame address (its caller's stack pointer), when the step to
    /// the caller computed one.
    pub cfa: Option<u64>,
    /// The registers as they were in this frame; only those in `known` are meaningful.
    pub regs: Registers,
    pub known: KnownRegs,
    /// Index of the executable mapping holding `lookup_pc` in `AddressSpace::mappings`.
    pub mapping: Option<usize>,
    /// `pc` in the image's own addresses (`pc - bias`), or `pc` without a mapping.
    pub offset: u64,
}

impl UnwoundFrame {
    pub fn module<'s>(&self, space: &'s AddressSpace) -> Option<&'s MappedImage> {
        space.mappings.get(self.mapping?)
    }

    /// The register's value in this frame, if known.
    pub fn reg(&self, reg: u16) -> Option<u64> {
        self.known
            .contains(reg)
            .then(|| self.regs.values[reg as usize])
    }
}

/// Why a walk stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// A normal end: the return address is undefined (`_start`, `clone3`) or zero.
    Outermost,
    /// `max_frames` frames were produced and the stack goes on.
    Truncated,
    /// The walk could not go on; the frames so far are right.
    Error(UnwindError),
}

/// Why a walk could not go on past a frame (`pc` is the frame's, or its lookup address as
/// the message says). The texts are what users see at the end of a stack.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnwindError {
    #[error("return address {return_address:#x} is not in an executable mapping")]
    NotExecutable { return_address: u64 },
    #[error("stack pointer unknown in the caller of {callee:#x}")]
    CallerSpUnknown { callee: u64 },
    #[error("cycle at pc {pc:#x} sp {sp:#x}")]
    Cycle { pc: u64, sp: u64 },
    #[error("stack pointer did not grow ({old_sp:#x} -> {new_sp:#x}) above {callee:#x}")]
    SpDidNotGrow {
        old_sp: u64,
        new_sp: u64,
        callee: u64,
    },
    #[error("sp unknown in the signal trampoline at {pc:#x}")]
    TrampolineSpUnknown { pc: u64 },
    /// No CFI and no frame pointer; `mapping` describes where `pc` is.
    #[error("no CFI for {pc:#x} ({mapping}) and no frame pointer")]
    NoCfi { pc: u64, mapping: String },
    #[error("bad CFI for {pc:#x}: {error}")]
    BadCfi { pc: u64, error: gimli::Error },
    /// A CFI expression that could not be read from its section.
    #[error("{0}")]
    CfiSection(gimli::Error),
    #[error("CFA of {pc:#x} needs {register}, unknown there")]
    CfaNeedsRegister { pc: u64, register: &'static str },
    #[error("CFI for {pc:#x} has no rule for the return address")]
    NoReturnAddressRule { pc: u64 },
    #[error("cannot read the return address of {pc:#x}: {error}")]
    ReturnAddressUnreadable { pc: u64, error: MemoryError },
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error("CFI expression at {pc:#x}: {error}")]
    Expression { pc: u64, error: gimli::Error },
    #[error("CFI expression at {pc:#x} needs {register}, unknown")]
    ExpressionNeedsRegister { pc: u64, register: &'static str },
    #[error("DW_OP_call_frame_cfa in a CFA expression")]
    CfaInCfaExpression,
    /// An expression that asks for something CFI cannot provide (`needs` is gimli's
    /// request, as debug text).
    #[error("CFI expression at {pc:#x} needs {needs}")]
    ExpressionNeeds { pc: u64, needs: String },
    #[error("CFI expression at {pc:#x}: unexpected result")]
    UnexpectedResult { pc: u64 },
    #[error("CFI expression at {pc:#x}: not one piece")]
    NotOnePiece { pc: u64 },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnwoundStack {
    pub frames: Vec<UnwoundFrame>,
    pub end: WalkEnd,
}

/// `mov $15, %rax; syscall`: `rt_sigreturn`, the body of every x86-64 signal trampoline.
const SIGRETURN: [u8; 9] = [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05];

/// `offsetof(ucontext_t, uc_mcontext.gregs)`: `uc_flags` and `uc_link` (8 each) and a
/// `stack_t` (24). Matches glibc's `__restore_rt` CFI, which reads rsp at uc + 160 =
/// 40 + 8 * REG_RSP.
const UC_GREGS: u64 = 40;

/// DWARF register number of each `gregs[REG_R8..=REG_RIP]` (order of `<sys/ucontext.h>`).
const GREGS_TO_DWARF: [u16; 17] = [8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7, 16];

/// The registers saved by the kernel for a signal, when a sigreturn trampoline is about to
/// run: its stack pointer then points at the `ucontext_t` of the `rt_sigframe` (the
/// handler's `ret` popped the frame's first word, `pretcode`). `fs_base` is not saved
/// there and is left 0.
pub fn registers_from_sigframe(
    sp: u64,
    memory: &dyn MemoryReader,
) -> Result<Registers, MemoryError> {
    let mut buf = [0u8; 8 * 17];
    memory.read(sp.wrapping_add(UC_GREGS), &mut buf)?;
    let mut regs = Registers::default();
    for (i, &reg) in GREGS_TO_DWARF.iter().enumerate() {
        let word: [u8; 8] = buf[i * 8..i * 8 + 8].try_into().unwrap_or_default();
        regs.values[reg as usize] = u64::from_le_bytes(word);
    }
    Ok(regs)
}

thread_local! {
    static CONTEXT: RefCell<UnwindContext<usize>> = RefCell::new(UnwindContext::new());
}

/// Unwinds a thread stopped with registers `regs`, producing at most `max_frames` frames.
pub fn unwind(
    regs: &Registers,
    memory: &dyn MemoryReader,
    space: &AddressSpace,
    max_frames: usize,
) -> UnwoundStack {
    CONTEXT.with(|ctx| match ctx.try_borrow_mut() {
        Ok(mut ctx) => walk(regs, memory, space, max_frames, &mut ctx),
        Err(_) => walk(regs, memory, space, max_frames, &mut UnwindContext::new()),
    })
}

fn walk(
    regs: &Registers,
    memory: &dyn MemoryReader,
    space: &AddressSpace,
    max_frames: usize,
    ctx: &mut UnwindContext<usize>,
) -> UnwoundStack {
    let mut frames = Vec::with_capacity(max_frames.min(64));
    if max_frames == 0 {
        return UnwoundStack {
            frames,
            end: WalkEnd::Truncated,
        };
    }
    let walker = Walker { memory, space };
    let first = walker.frame(
        regs.ip(),
        FrameKind::Innermost,
        Recovery::Captured,
        *regs,
        KnownRegs::ALL,
    );
    frames.push(first);
    let end = loop {
        let callee = frames.len() - 1;
        let step = walker.step(&mut frames[callee], ctx);
        let caller = match step {
            Ok(Some(c)) => c,
            Ok(None) => break WalkEnd::Outermost,
            Err(e) => break WalkEnd::Error(e),
        };
        if caller.pc == 0 {
            break WalkEnd::Outermost;
        }
        if let Err(e) = check_progress(&frames, &caller, space) {
            break WalkEnd::Error(e);
        }
        if frames.len() == max_frames {
            break WalkEnd::Truncated;
        }
        frames.push(caller);
    };
    UnwoundStack { frames, end }
}

/// The guards against garbage walks (see the module doc).
fn check_progress(
    frames: &[UnwoundFrame],
    caller: &UnwoundFrame,
    space: &AddressSpace,
) -> Result<(), UnwindError> {
    let Some(callee) = frames.last() else {
        return Ok(());
    };
    if space.find(caller.lookup_pc).is_none() {
        return Err(UnwindError::NotExecutable {
            return_address: caller.pc,
        });
    }
    let (Some(new_sp), Some(old_sp)) = (caller.reg(Registers::RSP), callee.reg(Registers::RSP))
    else {
        return Err(UnwindError::CallerSpUnknown { callee: callee.pc });
    };
    if caller.kind == FrameKind::SignalInterrupted {
        // A signal may have switched to an alternate stack: the sp may go down, so look
        // for a loop instead.
        if frames
            .iter()
            .any(|f| f.pc == caller.pc && f.reg(Registers::RSP) == Some(new_sp))
        {
            return Err(UnwindError::Cycle {
                pc: caller.pc,
                sp: new_sp,
            });
        }
    } else if new_sp <= old_sp {
        return Err(UnwindError::SpDidNotGrow {
            old_sp,
            new_sp,
            callee: callee.pc,
        });
    }
    Ok(())
}

/// The CFI found for an address: which section, the FDE, and the bases to evaluate it.
enum Found<'a> {
    Eh(
        EhFrame<Slice<'a>>,
        FrameDescriptionEntry<Slice<'a>>,
        BaseAddresses,
    ),
    Debug(
        DebugFrame<Slice<'a>>,
        FrameDescriptionEntry<Slice<'a>>,
        BaseAddresses,
    ),
}

impl Found<'_> {
    fn is_signal_trampoline(&self) -> bool {
        match self {
            Found::Eh(_, f, _) | Found::Debug(_, f, _) => f.is_signal_trampoline(),
        }
    }
}

struct Walker<'a> {
    memory: &'a dyn MemoryReader,
    space: &'a AddressSpace,
}

/// The registers of the caller a step computed, and the callee's CFA.
struct Recovered {
    regs: Registers,
    known: KnownRegs,
    cfa: u64,
}

impl<'a> Walker<'a> {
    /// From `callee` to its caller: `Ok(None)` at the outermost frame. Sets `callee.cfa`,
    /// and `callee.kind` when it turns out to be a signal trampoline.
    fn step(
        &self,
        callee: &mut UnwoundFrame,
        ctx: &mut UnwindContext<usize>,
    ) -> Result<Option<UnwoundFrame>, UnwindError> {
        let mapped = callee.mapping.map(|i| &self.space.mappings[i]);
        let found = mapped.and_then(|m| {
            Some((
                m,
                find_cfi(m.image()?, callee.lookup_pc.wrapping_sub(m.bias))?,
            ))
        });
        let sigreturn = match callee.kind {
            FrameKind::SignalHandlerTrampoline => true,
            // Stopped right at a trampoline's first instruction.
            FrameKind::Innermost => self.is_sigreturn(callee.pc),
            FrameKind::Call | FrameKind::SignalInterrupted => false,
        };
        // A trampoline without CFI of its own may lie within the FDE range of a function
        // beside it, which must not be used for it.
        let use_cfi = found
            .as_ref()
            .filter(|(_, f)| !sigreturn || f.is_signal_trampoline());
        if let Some((m, found)) = use_cfi {
            let signal = found.is_signal_trampoline();
            if signal && callee.kind == FrameKind::Call {
                callee.kind = FrameKind::SignalHandlerTrampoline;
            }
            let svma = callee.lookup_pc.wrapping_sub(m.bias);
            let Some(r) = self.apply_cfi(found, svma, callee, ctx)? else {
                return Ok(None);
            };
            callee.cfa = Some(r.cfa);
            let kind = if signal {
                FrameKind::SignalInterrupted
            } else {
                FrameKind::Call
            };
            let pc = r.regs.ip();
            return Ok(Some(self.frame(pc, kind, Recovery::Cfi, r.regs, r.known)));
        }
        if sigreturn {
            let sp = callee
                .reg(Registers::RSP)
                .ok_or(UnwindError::TrampolineSpUnknown { pc: callee.pc })?;
            let mut regs = registers_from_sigframe(sp, self.memory)?;
            regs.fs_base = callee.regs.fs_base;
            let pc = regs.ip();
            return Ok(Some(self.frame(
                pc,
                FrameKind::SignalInterrupted,
                Recovery::SignalContext,
                regs,
                KnownRegs::ALL,
            )));
        }
        self.fallback(callee)
    }

    /// A frame at `pc`. A return address at a sigreturn trampoline makes the frame a
    /// [`FrameKind::SignalHandlerTrampoline`], looked up at pc: the handler "returns" to
    /// its first instruction, and pc - 1 would name the function before it (glibc's
    /// `__restore_rt` FDE starts one byte early to cope; trampolines without CFI do not).
    fn frame(
        &self,
        pc: u64,
        kind: FrameKind,
        how: Recovery,
        regs: Registers,
        known: KnownRegs,
    ) -> UnwoundFrame {
        let kind = if kind == FrameKind::Call && self.is_sigreturn(pc) {
            FrameKind::SignalHandlerTrampoline
        } else {
            kind
        };
        let lookup_pc = match kind {
            FrameKind::Call => pc.wrapping_sub(1),
            _ => pc,
        };
        let space = self.space;
        let mapping = space.find_index(lookup_pc);
        let offset = mapping.map_or(pc, |i| pc.wrapping_sub(space.mappings[i].bias));
        UnwoundFrame {
            pc,
            lookup_pc,
            kind,
            how,
            cfa: None,
            regs,
            known,
            mapping,
            offset,
        }
    }

    fn is_sigreturn(&self, pc: u64) -> bool {
        let from_image = self.space.find(pc).and_then(|m| {
            let img = m.image()?;
            img.bytes_at(pc.wrapping_sub(m.bias), SIGRETURN.len())
        });
        match from_image {
            Some(b) => b == SIGRETURN,
            None => {
                let mut b = [0u8; SIGRETURN.len()];
                self.memory.read(pc, &mut b).is_ok() && b == SIGRETURN
            }
        }
    }

    /// Frame pointer chain, or for the innermost (or signal-interrupted) frame a return
    /// address at `[sp]`.
    fn fallback(&self, callee: &mut UnwoundFrame) -> Result<Option<UnwoundFrame>, UnwindError> {
        let sp = callee.reg(Registers::RSP);
        let bp = callee.reg(Registers::RBP);
        let no_cfi = || UnwindError::NoCfi {
            pc: callee.lookup_pc,
            mapping: self.space.describe(callee.lookup_pc),
        };
        if let (Some(sp), Some(bp)) = (sp, bp) {
            if bp == 0 && callee.how == Recovery::FramePointer {
                // The ABI's end of the frame pointer chain (`_start` clears rbp). Only on
                // a chain: elsewhere rbp may be an ordinary register that happens to be 0.
                return Ok(None);
            }
            if bp >= sp && bp % 8 == 0 {
                let saved_bp = self.memory.read_u64(bp);
                let ra = self.memory.read_u64(bp.wrapping_add(8));
                if let (Ok(saved_bp), Ok(ra)) = (saved_bp, ra) {
                    let caller =
                        self.caller_of(callee, Recovery::FramePointer, ra, bp + 16, Some(saved_bp));
                    return Ok(Some(caller));
                }
            }
        }
        // Only where the pc can be anywhere in a function: in a caller the return address
        // is long gone from [sp].
        let interrupted = matches!(
            callee.kind,
            FrameKind::Innermost | FrameKind::SignalInterrupted
        );
        if interrupted
            && let Some(sp) = sp
            && let Ok(ra) = self.memory.read_u64(sp)
            && self.space.find(ra.wrapping_sub(1)).is_some()
        {
            // rbp is unchanged by a function that did not set up a frame.
            return Ok(Some(self.caller_of(
                callee,
                Recovery::StackScan,
                ra,
                sp + 8,
                bp,
            )));
        }
        Err(no_cfi())
    }

    /// The caller found without CFI: only rip, rsp (= the callee's CFA) and, when given,
    /// rbp are known; the other registers may have been changed by the callee.
    fn caller_of(
        &self,
        callee: &mut UnwoundFrame,
        how: Recovery,
        ra: u64,
        cfa: u64,
        bp: Option<u64>,
    ) -> UnwoundFrame {
        let mut regs = callee.regs;
        let mut known = KnownRegs::default();
        let mut set = |reg: u16, v: u64| {
            regs.values[reg as usize] = v;
            known.insert(reg);
        };
        set(Registers::RIP, ra);
        set(Registers::RSP, cfa);
        if let Some(bp) = bp {
            set(Registers::RBP, bp);
        }
        callee.cfa = Some(cfa);
        self.frame(ra, FrameKind::Call, how, regs, known)
    }

    fn apply_cfi(
        &self,
        found: &Found<'a>,
        svma: u64,
        callee: &UnwoundFrame,
        ctx: &mut UnwindContext<usize>,
    ) -> Result<Option<Recovered>, UnwindError> {
        let err = |error| UnwindError::BadCfi {
            pc: callee.lookup_pc,
            error,
        };
        match found {
            Found::Eh(section, fde, bases) => {
                let row = fde
                    .unwind_info_for_address(section, bases, ctx, svma)
                    .map_err(err)?;
                self.apply_row(section, row, callee)
            }
            Found::Debug(section, fde, bases) => {
                let row = fde
                    .unwind_info_for_address(section, bases, ctx, svma)
                    .map_err(err)?;
                self.apply_row(section, row, callee)
            }
        }
    }

    fn apply_row<S: UnwindSection<Slice<'a>>>(
        &self,
        section: &S,
        row: &UnwindTableRow<usize>,
        callee: &UnwoundFrame,
    ) -> Result<Option<Recovered>, UnwindError> {
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => callee
                .reg(register.0)
                .ok_or(UnwindError::CfaNeedsRegister {
                    pc: callee.pc,
                    register: Registers::name(register.0),
                })?
                .wrapping_add(*offset as u64),
            CfaRule::Expression(e) => {
                let expr = e.get(section).map_err(UnwindError::CfiSection)?;
                match self.evaluate(expr, None, callee, None)? {
                    Evaluated::Address(a) | Evaluated::Value(a) => a,
                }
            }
        };
        let mut regs = Registers {
            fs_base: callee.regs.fs_base,
            ..Registers::default()
        };
        let mut known = KnownRegs::default();
        for reg in 0..Registers::COUNT as u16 {
            let value = match row.register(Register(reg)) {
                None => match reg {
                    Registers::RSP => Some(cfa),
                    // Callee-saved registers the callee did not save are unchanged.
                    Registers::RBX | Registers::RBP | 12..=15 => callee.reg(reg),
                    Registers::RIP => {
                        return Err(UnwindError::NoReturnAddressRule {
                            pc: callee.lookup_pc,
                        });
                    }
                    _ => None,
                },
                Some(rule) => self.apply_rule(section, rule, cfa, callee, reg)?,
            };
            if let Some(v) = value {
                regs.values[reg as usize] = v;
                known.insert(reg);
            } else if reg == Registers::RIP {
                // `DW_CFA_undefined rip`: the end of the stack (`_start`, `clone3`).
                return Ok(None);
            }
        }
        Ok(Some(Recovered { regs, known, cfa }))
    }

    /// A register's value in the caller by one rule; `Ok(None)` when it is not known. A
    /// return address that cannot be read is an error; another register just unknown.
    fn apply_rule<S: UnwindSection<Slice<'a>>>(
        &self,
        section: &S,
        rule: RegisterRule<usize>,
        cfa: u64,
        callee: &UnwoundFrame,
        reg: u16,
    ) -> Result<Option<u64>, UnwindError> {
        let read = |addr: u64| match self.memory.read_u64(addr) {
            Ok(v) => Ok(Some(v)),
            Err(error) if reg == Registers::RIP => Err(UnwindError::ReturnAddressUnreadable {
                pc: callee.pc,
                error,
            }),
            Err(_) => Ok(None),
        };
        match rule {
            RegisterRule::Undefined | RegisterRule::Architectural => Ok(None),
            RegisterRule::SameValue => Ok(callee.reg(reg)),
            RegisterRule::Offset(n) => read(cfa.wrapping_add(n as u64)),
            RegisterRule::ValOffset(n) => Ok(Some(cfa.wrapping_add(n as u64))),
            RegisterRule::Register(r) => Ok(callee.reg(r.0)),
            RegisterRule::Constant(c) => Ok(Some(c)),
            RegisterRule::Expression(e) | RegisterRule::ValExpression(e) => {
                let expr = e.get(section).map_err(UnwindError::CfiSection)?;
                let got = self.evaluate(expr, Some(cfa), callee, Some(cfa));
                let got = match got {
                    Ok(g) => g,
                    Err(e) if reg == Registers::RIP => return Err(e),
                    Err(_) => return Ok(None),
                };
                match (rule, got) {
                    (RegisterRule::Expression(_), Evaluated::Address(a)) => read(a),
                    (_, Evaluated::Address(v) | Evaluated::Value(v)) => Ok(Some(v)),
                }
            }
        }
    }

    /// Evaluates a CFI expression in the callee's registers. `initial` is pushed first
    /// (the CFA, for register rules).
    fn evaluate(
        &self,
        expr: Expression<Slice<'a>>,
        initial: Option<u64>,
        callee: &UnwoundFrame,
        cfa: Option<u64>,
    ) -> Result<Evaluated, UnwindError> {
        let mut eval: Evaluation<Slice<'a>> = expr.evaluation(ENCODING);
        if let Some(v) = initial {
            eval.set_initial_value(v);
        }
        // CFI expressions are a handful of operations; a loop is garbage.
        eval.set_max_iterations(10_000);
        let err = |error| UnwindError::Expression {
            pc: callee.lookup_pc,
            error,
        };
        let mut state = eval.evaluate().map_err(err)?;
        loop {
            state = match state {
                EvaluationResult::Complete => break,
                EvaluationResult::RequiresMemory { address, size, .. } => {
                    let size = usize::from(size).min(8);
                    let mut b = [0u8; 8];
                    self.memory.read(address, &mut b[..size])?;
                    eval.resume_with_memory(Value::Generic(u64::from_le_bytes(b)))
                        .map_err(err)?
                }
                EvaluationResult::RequiresRegister { register, .. } => {
                    let v = callee
                        .reg(register.0)
                        .ok_or(UnwindError::ExpressionNeedsRegister {
                            pc: callee.lookup_pc,
                            register: Registers::name(register.0),
                        })?;
                    eval.resume_with_register(Value::Generic(v)).map_err(err)?
                }
                EvaluationResult::RequiresCallFrameCfa => {
                    let cfa = cfa.ok_or(UnwindError::CfaInCfaExpression)?;
                    eval.resume_with_call_frame_cfa(cfa).map_err(err)?
                }
                other => {
                    return Err(UnwindError::ExpressionNeeds {
                        pc: callee.lookup_pc,
                        needs: format!("{other:?}"),
                    });
                }
            };
        }
        match eval.as_result() {
            [piece] => match piece.location {
                Location::Address { address } => Ok(Evaluated::Address(address)),
                Location::Value { value } => {
                    value.to_u64(u64::MAX).map(Evaluated::Value).map_err(err)
                }
                _ => Err(UnwindError::UnexpectedResult {
                    pc: callee.lookup_pc,
                }),
            },
            _ => Err(UnwindError::NotOnePiece {
                pc: callee.lookup_pc,
            }),
        }
    }
}

enum Evaluated {
    Address(u64),
    Value(u64),
}

/// CFI expressions carry no encoding of their own; x86-64 is 64-bit.
const ENCODING: gimli::Encoding = gimli::Encoding {
    format: gimli::Format::Dwarf32,
    version: 4,
    address_size: 8,
};

fn bases(img: &Image) -> BaseAddresses {
    let mut b = BaseAddresses::default();
    if let Some(s) = &img.eh_frame_hdr {
        b = b.set_eh_frame_hdr(s.address);
    }
    if let Some(s) = &img.eh_frame {
        b = b.set_eh_frame(s.address);
    }
    if let Some(t) = img.text {
        b = b.set_text(t);
    }
    if let Some(g) = img.got {
        b = b.set_got(g);
    }
    b
}

/// The FDE covering `svma`: `.eh_frame` through the binary search table of
/// `.eh_frame_hdr` (or a sorted table built once), then `.debug_frame`.
fn find_cfi(img: &Image, svma: u64) -> Option<Found<'_>> {
    let bases = bases(img);
    if let Some(eh) = &img.eh_frame {
        let mut section = EhFrame::new(img.section_data(eh), LittleEndian);
        section.set_address_size(8);
        let from_hdr = img.eh_frame_hdr.as_ref().and_then(|h| {
            let hdr = EhFrameHdr::new(img.section_data(h), LittleEndian)
                .parse(&bases, 8)
                .ok()?;
            // An empty table means no table: fall back to the sorted one.
            let table = hdr.table()?;
            Some(table.fde_for_address(&section, &bases, svma, EhFrame::cie_from_offset))
        });
        let fde = match from_hdr {
            Some(r) => r.ok(),
            None => sorted_lookup(&section, &bases, &img.eh_frame_table, svma),
        };
        if let Some(fde) = fde {
            return Some(Found::Eh(section, fde, bases));
        }
    }
    let df = img.debug_frame.as_ref()?;
    let mut section = DebugFrame::new(img.section_data(df), LittleEndian);
    section.set_address_size(8);
    let bases = BaseAddresses::default();
    let fde = sorted_lookup(&section, &bases, &img.debug_frame_table, svma)?;
    Some(Found::Debug(section, fde, bases))
}

fn sorted_lookup<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    table: &OnceLock<Vec<FdeEntry>>,
    svma: u64,
) -> Option<FrameDescriptionEntry<Slice<'a>>> {
    let table = table.get_or_init(|| fde_table(section, bases));
    let i = table.partition_point(|e| e.start <= svma).checked_sub(1)?;
    let e = table[i];
    if svma >= e.end {
        return None;
    }
    let fde = section
        .fde_from_offset(bases, S::Offset::from(e.offset), S::cie_from_offset)
        .ok()?;
    fde.contains(svma).then_some(fde)
}

/// Every FDE of a section by start address. Parsing stops at the first malformed entry:
/// what came before it is still usable.
pub(crate) fn fde_table<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
) -> Vec<FdeEntry> {
    let mut out = Vec::new();
    let mut entries = section.entries(bases);
    while let Ok(Some(entry)) = entries.next() {
        if let gimli::CieOrFde::Fde(partial) = entry
            && let Ok(fde) = partial.parse(S::cie_from_offset)
            && fde.len() > 0
        {
            out.push(FdeEntry {
                start: fde.initial_address(),
                end: fde.initial_address().saturating_add(fde.len()),
                offset: UnwindOffset::into(S::Offset::from(fde.offset())),
            });
        }
    }
    out.sort_by_key(|e| e.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::MappedImage;
    use crate::memory::MemoryCopy;

    const CODE: u64 = 0x40_0000;
    const STACK: u64 = 0x7ff0_0000;

    /// One executable mapping without an image: no CFI, so only the fallbacks apply.
    fn space() -> AddressSpace {
        AddressSpace {
            mappings: vec![MappedImage {
                start: CODE,
                end: CODE + 0x10000,
                offset: 0,
                path: "[anon:jit]".into(),
                bias: CODE,
                image: Err("no file".into()),
            }],
        }
    }

    /// A stack of `words` u64 at STACK.
    fn stack(words: &[u64]) -> MemoryCopy {
        MemoryCopy {
            base: STACK,
            bytes: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        }
    }

    fn regs(ip: u64, sp: u64, bp: u64) -> Registers {
        let mut r = Registers::default();
        r.values[Registers::RIP as usize] = ip;
        r.values[Registers::RSP as usize] = sp;
        r.values[Registers::RBP as usize] = bp;
        r
    }

    /// A frame-pointer chain of three frames at 0x20-byte steps, ending with rbp = 0.
    fn chain() -> MemoryCopy {
        let w = |i: u64| STACK + 8 * i;
        stack(&[
            0,
            0,
            w(4),         // frame 0's rbp -> [saved rbp]
            CODE + 0x200, // return address into frame 1
            w(8),         // frame 1's saved rbp
            CODE + 0x300,
            0,
            0,
            0, // frame 2's saved rbp: end of chain
            CODE + 0x400,
            0,
            0,
        ])
    }

    #[test]
    fn frame_pointer_chain_ends_at_zero_rbp() {
        let mem = chain();
        let s = unwind(&regs(CODE + 0x100, STACK, STACK + 16), &mem, &space(), 64);
        let pcs: Vec<u64> = s.frames.iter().map(|f| f.pc).collect();
        assert_eq!(
            pcs,
            [CODE + 0x100, CODE + 0x200, CODE + 0x300, CODE + 0x400]
        );
        assert_eq!(s.end, WalkEnd::Outermost);
        assert_eq!(s.frames[1].how, Recovery::FramePointer);
        assert_eq!(s.frames[1].kind, FrameKind::Call);
        assert_eq!(s.frames[1].lookup_pc, CODE + 0x1ff);
        assert_eq!(s.frames[1].offset, 0x200);
        assert_eq!(s.frames[0].cfa, Some(STACK + 32));
        assert_eq!(s.frames[1].reg(Registers::RSP), Some(STACK + 32));
        assert_eq!(s.frames[1].reg(Registers::RBX), None);
        assert_eq!(s.frames[3].reg(Registers::RBP), Some(0));
    }

    #[test]
    fn truncates_at_max_frames() {
        let mem = chain();
        let s = unwind(&regs(CODE + 0x100, STACK, STACK + 16), &mem, &space(), 2);
        assert_eq!(s.frames.len(), 2);
        assert_eq!(s.end, WalkEnd::Truncated);
        let s = unwind(&regs(CODE + 0x100, STACK, STACK + 16), &mem, &space(), 0);
        assert!(s.frames.is_empty());
        // Exactly as many frames as the stack has: not truncated.
        let s = unwind(&regs(CODE + 0x100, STACK, STACK + 16), &mem, &space(), 4);
        assert_eq!((s.frames.len(), s.end), (4, WalkEnd::Outermost));
    }

    #[test]
    fn a_frame_pointer_pointing_at_itself_is_not_followed() {
        // rbp points to itself: the next frame's sp would not grow.
        let mem = stack(&[0, 0, STACK + 16, CODE + 0x200, 0, 0]);
        let s = unwind(&regs(CODE + 0x100, STACK, STACK + 16), &mem, &space(), 64);
        // The caller's rbp is below its sp: not a frame pointer, and no CFI to go on.
        assert_eq!(s.frames.len(), 2, "{s:?}");
        assert!(
            matches!(&s.end, WalkEnd::Error(e) if e.to_string().contains("no frame pointer")),
            "{s:?}"
        );
    }

    #[test]
    fn garbage_return_addresses_and_unreadable_memory_end_in_errors() {
        // A return address outside every executable mapping.
        let mem = stack(&[0, 0, STACK + 32, 0xdead_beef, 0, 0]);
        let s = unwind(&regs(CODE + 0x100, STACK, STACK + 16), &mem, &space(), 64);
        assert_eq!(s.frames.len(), 1);
        assert!(
            matches!(&s.end, WalkEnd::Error(e) if e.to_string().contains("not in an executable"))
        );
        // rbp outside the copy, [sp] not a code address: nothing to go on.
        let s = unwind(&regs(CODE + 0x100, STACK, 0x1000_0000), &mem, &space(), 64);
        assert!(
            matches!(&s.end, WalkEnd::Error(e) if e.to_string().contains("no CFI")),
            "{s:?}"
        );
        // pc outside every mapping, no memory at all.
        let s = unwind(
            &regs(0x10, 0x20, 0x30),
            &MemoryCopy {
                base: 0,
                bytes: vec![],
            },
            &space(),
            64,
        );
        assert_eq!(s.frames.len(), 1);
        assert!(matches!(s.end, WalkEnd::Error(_)));
        // Misaligned rbp is not followed.
        let s = unwind(&regs(CODE + 0x100, STACK, STACK + 17), &mem, &space(), 64);
        assert!(
            matches!(&s.end, WalkEnd::Error(e) if e.to_string().contains("no CFI")),
            "{s:?}"
        );
    }

    #[test]
    fn innermost_frame_without_frame_pointer_uses_the_return_address_at_sp() {
        let mem = stack(&[CODE + 0x500, 0, 0, 0]);
        // rbp is 0 (not a frame pointer) in a leaf function without CFI.
        let s = unwind(&regs(CODE + 0x100, STACK, 0), &mem, &space(), 64);
        assert_eq!(s.frames.len(), 2, "{s:?}");
        assert_eq!(s.frames[1].pc, CODE + 0x500);
        assert_eq!(s.frames[1].how, Recovery::StackScan);
        assert_eq!(s.frames[1].reg(Registers::RSP), Some(STACK + 8));
        // The caller has rbp 0 but was not reached by a frame pointer chain: rbp may be a
        // plain register there, so this is no proof of the outermost frame.
        assert!(
            matches!(&s.end, WalkEnd::Error(e) if e.to_string().contains("no frame pointer")),
            "{s:?}"
        );
    }

    #[test]
    fn sigframe_registers_follow_the_gregs_order() {
        // gregs[i] = 100 + i, at uc + 40.
        let mut words = vec![0u64; 5];
        words.extend((0..23).map(|i| 100 + i));
        let r = registers_from_sigframe(STACK, &stack(&words)).unwrap();
        assert_eq!(r.values[8], 100); // r8
        assert_eq!(r.values[15], 107); // r15
        assert_eq!(r.values[5], 108); // rdi
        assert_eq!(r.values[Registers::RBP as usize], 110);
        assert_eq!(r.values[Registers::RBX as usize], 111);
        assert_eq!(r.values[0], 113); // rax
        assert_eq!(r.sp(), 115);
        assert_eq!(r.ip(), 116);
        assert!(registers_from_sigframe(STACK + 8 * 12, &stack(&words)).is_err());
    }

    /// The vdso, read from this process's memory, has CFI for its functions (a thread
    /// sampled in `clock_gettime` is in there).
    #[test]
    fn vdso_functions_have_cfi() {
        let pid = std::process::id() as crate::procfs::Pid;
        let maps = crate::procfs::maps(pid).unwrap();
        let cache = crate::images::ImageCache::new();
        let mem = crate::memory::ProcessMemory::new(pid);
        let space = AddressSpace::load(pid, &maps, &mem, &cache);
        let vdso = space.mappings.iter().find(|m| m.path == "[vdso]").unwrap();
        let img = vdso.image().expect("vdso parsed");
        let f = img
            .symbol_address("__vdso_clock_gettime")
            .expect("vdso symbol");
        assert!(find_cfi(img, f + 1).is_some());
        let avma = f + vdso.bias;
        assert!((vdso.start..vdso.end).contains(&avma));
        assert!(space.describe(avma).starts_with("[vdso]!"));
    }
}
