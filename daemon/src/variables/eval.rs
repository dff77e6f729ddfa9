//! Evaluating a plan in one frame of one stopped process: the DWARF location expression
//! run with that frame's registers, CFA and frame base and the process's memory, and the
//! bytes it designates read. What cannot be evaluated exactly is an error or optimized
//! out, never a guess.

use gimli::{
    EndianSlice, EvaluationResult, Expression, LittleEndian, Location, UnitOffset, Value, ValueType,
};

use crate::memory::{MemoryReader, Registers};
use crate::unwind::{FrameKind, Recovery, UnwoundFrame};

use super::plan::{Plan, Source};
use super::unreadable::{OPTIMIZED_OUT, Unreadable, error, optimized};

/// The value of `plan` in `frame` (of an image loaded at `bias`) as text and, for
/// integer-like types, a number. A C++ reference reads as what it refers to (gdb's
/// `@0x...: 3` without the address).
pub(super) fn read_value(
    plan: &Plan,
    frame: &UnwoundFrame,
    memory: &dyn MemoryReader,
    bias: u64,
) -> Result<(String, Option<i64>), Unreadable> {
    let state = FrameState {
        frame,
        memory,
        bias,
        plan,
    };
    let bytes = state.value_bytes()?;
    let (text, integer) = plan.ty.decode(&bytes);
    match &plan.referent {
        Some(referent) => {
            let address = u64::from_le_bytes(sized(bytes, 8)?.try_into().unwrap_or_default());
            let mut target = vec![0u8; referent.size()];
            memory
                .read(address, &mut target)
                .map_err(|_| error(format!("cannot read the referenced value at {text}")))?;
            Ok(referent.decode(&target))
        }
        None => Ok((text, integer)),
    }
}

type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// A plan evaluated in one frame of one process.
struct FrameState<'a> {
    frame: &'a UnwoundFrame,
    memory: &'a dyn MemoryReader,
    /// The image's load bias (added to `DW_OP_addr` addresses).
    bias: u64,
    plan: &'a Plan,
}

impl FrameState<'_> {
    /// The variable's bytes (as many as its type has).
    fn value_bytes(&self) -> Result<Vec<u8>, Unreadable> {
        let size = self.plan.ty.size();
        let expression = match &self.plan.value {
            Source::Constant(bytes) => return sized(bytes.clone(), size),
            Source::Expression(e) => e,
        };
        let pieces = self.evaluate(expression, 0)?;
        match pieces.as_slice() {
            [] => Err(optimized(OPTIMIZED_OUT)),
            [one] if one.size_in_bits.is_none() => match one.location {
                // A value expression's result is the value, not an address to read.
                Location::Address { address } if self.plan.computes_value => {
                    sized(address.to_le_bytes().to_vec(), size)
                }
                _ => self.piece_bytes(&one.location, size),
            },
            several => {
                let mut out = Vec::with_capacity(size);
                for p in several {
                    let bits = p.size_in_bits.unwrap_or(0);
                    if bits == 0 || bits % 8 != 0 || p.bit_offset.is_some_and(|o| o != 0) {
                        return Err(error("the value is split into bit pieces (unsupported)"));
                    }
                    if p.location.is_empty() {
                        return Err(optimized("partly optimized out at this pc"));
                    }
                    let len = usize::try_from(bits / 8)
                        .ok()
                        .filter(|&len| out.len() + len <= size)
                        .ok_or_else(|| error("the pieces are larger than the type (bad DWARF?)"))?;
                    out.extend(self.piece_bytes(&p.location, len)?);
                }
                sized(out, size)
            }
        }
    }

    /// `want` bytes of one piece's location.
    fn piece_bytes(
        &self,
        location: &Location<Slice<'_>>,
        want: usize,
    ) -> Result<Vec<u8>, Unreadable> {
        match location {
            Location::Empty => Err(optimized(OPTIMIZED_OUT)),
            Location::Register { register } => {
                sized(self.register(register.0)?.to_le_bytes().to_vec(), want)
            }
            Location::Address { address } => {
                let mut buf = vec![0u8; want];
                self.memory
                    .read(*address, &mut buf)
                    .map_err(|_| error(format!("cannot read {want} bytes at {address:#x}")))?;
                Ok(buf)
            }
            Location::Value { value } => sized(value_bits(*value).to_le_bytes().to_vec(), want),
            Location::Bytes { value } => sized(value.to_vec(), want),
            Location::ImplicitPointer { .. } => Err(optimized(
                "an implicit pointer: what it points to was optimized out",
            )),
        }
    }

    /// A register of this frame. One the unwinder did not recover in a caller was not
    /// saved by its callees (caller-saved: the value is gone, gdb's `<optimized out>`),
    /// unless the frame was found without CFI, which recovers nothing but rip, rsp, rbp.
    fn register(&self, reg: u16) -> Result<u64, Unreadable> {
        if let Some(v) = self.frame.reg(reg) {
            return Ok(v);
        }
        let name = register_name(reg);
        if self.frame.kind == FrameKind::Innermost {
            // Every general-purpose register of the stopped thread is known.
            return Err(error(format!(
                "the value is in {name}, which strata does not capture"
            )));
        }
        if matches!(self.frame.how, Recovery::FramePointer | Recovery::StackScan) {
            return Err(error(format!(
                "{name} is unknown in this frame (unwound without CFI)"
            )));
        }
        Err(optimized(format!(
            "optimized out: {name} is not saved in this frame"
        )))
    }

    /// Runs a DWARF expression to its pieces. `depth` counts frame-base evaluations
    /// nested in it (a frame base that needs a frame base is bad DWARF).
    fn evaluate<'e>(
        &self,
        bytes: &'e [u8],
        depth: u32,
    ) -> Result<Vec<gimli::Piece<Slice<'e>>>, Unreadable> {
        let expression = Expression(EndianSlice::new(bytes, LittleEndian));
        let mut eval = expression.evaluation(self.plan.encoding);
        eval.set_max_iterations(10_000);
        let bad = |e: gimli::Error| error(format!("location expression failed: {e}"));
        let mut state = eval.evaluate().map_err(bad)?;
        loop {
            state = match state {
                EvaluationResult::Complete => break,
                EvaluationResult::RequiresMemory {
                    address,
                    size,
                    base_type,
                    ..
                } => {
                    let size = usize::from(size).min(8);
                    let mut b = [0u8; 8];
                    self.memory
                        .read(address, &mut b[..size])
                        .map_err(|_| error(format!("cannot read {size} bytes at {address:#x}")))?;
                    let value = if base_type.0 == 0 {
                        Value::Generic(u64::from_le_bytes(b))
                    } else {
                        let ty = self.base_type(base_type)?;
                        Value::parse(ty, EndianSlice::new(&b[..size], LittleEndian)).map_err(bad)?
                    };
                    eval.resume_with_memory(value).map_err(bad)?
                }
                EvaluationResult::RequiresRegister {
                    register,
                    base_type,
                } => {
                    let raw = self.register(register.0)?;
                    let value = if base_type.0 == 0 {
                        Value::Generic(raw)
                    } else {
                        Value::from_u64(self.base_type(base_type)?, raw).map_err(bad)?
                    };
                    eval.resume_with_register(value).map_err(bad)?
                }
                EvaluationResult::RequiresFrameBase => {
                    let base = self.frame_base(depth)?;
                    eval.resume_with_frame_base(base).map_err(bad)?
                }
                EvaluationResult::RequiresCallFrameCfa => {
                    let cfa = self
                        .frame
                        .cfa
                        .ok_or_else(|| error("the frame's CFA is unknown (unwound without CFI)"))?;
                    eval.resume_with_call_frame_cfa(cfa).map_err(bad)?
                }
                EvaluationResult::RequiresRelocatedAddress(address) => eval
                    .resume_with_relocated_address(address.wrapping_add(self.bias))
                    .map_err(bad)?,
                EvaluationResult::RequiresIndexedAddress { index, relocate } => {
                    let address = self
                        .plan
                        .indexed
                        .iter()
                        .find(|(i, _)| *i == index.0)
                        .map(|(_, a)| *a)
                        .ok_or_else(|| error("a .debug_addr entry could not be read"))?;
                    let address = if relocate {
                        address.wrapping_add(self.bias)
                    } else {
                        address
                    };
                    eval.resume_with_indexed_address(address).map_err(bad)?
                }
                EvaluationResult::RequiresBaseType(offset) => {
                    let ty = self.base_type(offset)?;
                    eval.resume_with_base_type(ty).map_err(bad)?
                }
                EvaluationResult::RequiresEntryValue(_)
                | EvaluationResult::RequiresParameterRef(_) => {
                    return Err(optimized("optimized out: entry value not recoverable"));
                }
                EvaluationResult::RequiresTls(_) => {
                    return Err(error("thread-local variables are not supported yet"));
                }
                EvaluationResult::RequiresAtLocation(_) => {
                    return Err(error("DW_OP_call in a location (unsupported)"));
                }
                EvaluationResult::RequiresWasmLocal { .. }
                | EvaluationResult::RequiresWasmGlobal { .. }
                | EvaluationResult::RequiresWasmStack { .. } => {
                    return Err(error("WebAssembly locations are not supported"));
                }
            };
        }
        Ok(eval.result())
    }

    /// The physical function's frame base at this pc: usually `DW_OP_call_frame_cfa`, or
    /// a register (`DW_OP_reg6`: the frame base is rbp's value).
    fn frame_base(&self, depth: u32) -> Result<u64, Unreadable> {
        let bytes = self
            .plan
            .frame_base
            .as_deref()
            .ok_or_else(|| error("the function has no frame base at this pc"))?;
        if depth > 0 {
            return Err(error("a frame base that needs a frame base (bad DWARF)"));
        }
        let pieces = self.evaluate(bytes, depth + 1)?;
        match pieces.as_slice() {
            [one] => match &one.location {
                Location::Register { register } => self.register(register.0),
                Location::Address { address } => Ok(*address),
                Location::Value { value } => Ok(value_bits(*value)),
                _ => Err(error("unsupported frame base")),
            },
            _ => Err(error("unsupported frame base")),
        }
    }

    fn base_type(&self, offset: UnitOffset<usize>) -> Result<ValueType, Unreadable> {
        self.plan
            .base_types
            .iter()
            .find(|(o, _)| *o == offset)
            .map(|(_, t)| *t)
            .ok_or_else(|| error("a typed DWARF operation names an unreadable base type"))
    }
}

/// Exactly `size` bytes of `bytes` (a register or value holds 8; the type may want fewer).
fn sized(mut bytes: Vec<u8>, size: usize) -> Result<Vec<u8>, Unreadable> {
    if bytes.len() < size {
        return Err(error(format!(
            "the location holds {} bytes, the type needs {size}",
            bytes.len()
        )));
    }
    bytes.truncate(size);
    Ok(bytes)
}

/// A DWARF stack value's bits (floats as their IEEE bits, integers sign-extended).
fn value_bits(value: Value) -> u64 {
    match value {
        Value::F32(f) => u64::from(f.to_bits()),
        Value::F64(f) => f.to_bits(),
        other => other.to_u64(u64::MAX).unwrap_or(0),
    }
}

/// x86-64 DWARF register names, general-purpose and beyond.
fn register_name(reg: u16) -> String {
    match reg {
        0..=16 => Registers::name(reg).to_string(),
        17..=32 => format!("xmm{}", reg - 17),
        33..=40 => format!("st{}", reg - 33),
        41..=48 => format!("mm{}", reg - 41),
        _ => format!("DWARF register {reg}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryCopy;
    use crate::unwind::KnownRegs;
    use crate::variables::types::Scalar;

    /// A frame whose registers are all known but rbx, as an outer frame's are.
    fn frame(kind: FrameKind) -> UnwoundFrame {
        let mut regs = Registers::default();
        regs.values[Registers::RBP as usize] = 0x1000;
        regs.values[Registers::RSP as usize] = 0xff0;
        let mut known = KnownRegs::ALL;
        known.0 &= !(1 << Registers::RBX);
        UnwoundFrame {
            pc: 0x401000,
            lookup_pc: 0x400fff,
            kind,
            how: Recovery::Cfi,
            cfa: Some(0x1010),
            regs,
            known,
            mapping: None,
            offset: 0x400fff,
        }
    }

    fn plan(ty: Scalar, expression: &[u8], frame_base: Option<&[u8]>) -> Plan {
        Plan {
            encoding: gimli::Encoding {
                format: gimli::Format::Dwarf32,
                version: 5,
                address_size: 8,
            },
            value: Source::Expression(expression.to_vec()),
            computes_value: false,
            frame_base: frame_base.map(<[u8]>::to_vec),
            ty,
            referent: None,
            base_types: vec![],
            indexed: vec![],
        }
    }

    /// Memory: a stack at 0xf00..0x1100 whose byte at `a` is `a % 256`, and a global int
    /// 42 at 0x500010.
    fn memory() -> [MemoryCopy; 2] {
        [
            MemoryCopy {
                base: 0xf00,
                bytes: (0..512u32).map(|i| i as u8).collect(),
            },
            MemoryCopy {
                base: 0x50_0010,
                bytes: 42i32.to_le_bytes().to_vec(),
            },
        ]
    }

    fn eval(p: &Plan, kind: FrameKind) -> Result<Vec<u8>, Unreadable> {
        let f = frame(kind);
        let m = memory();
        FrameState {
            frame: &f,
            memory: &&m[..],
            bias: 0x10_0000,
            plan: p,
        }
        .value_bytes()
    }

    #[test]
    fn locations_evaluate_against_the_frame() {
        let int = Scalar::Signed(4);
        // DW_OP_fbreg -16 with frame base DW_OP_call_frame_cfa: cfa 0x1010 - 16 = 0x1000.
        let p = plan(int.clone(), &[0x91, 0x70], Some(&[0x9c]));
        assert_eq!(eval(&p, FrameKind::Call).unwrap(), vec![0, 1, 2, 3]);
        // The same with frame base DW_OP_reg6 (rbp = 0x1000): 0x1000 - 16 = 0xff0.
        let p = plan(int.clone(), &[0x91, 0x70], Some(&[0x56]));
        assert_eq!(
            eval(&p, FrameKind::Call).unwrap(),
            vec![0xf0, 0xf1, 0xf2, 0xf3]
        );
        // DW_OP_addr 0x400010, relocated by the bias 0x100000.
        let mut addr = vec![0x03];
        addr.extend(0x40_0010u64.to_le_bytes());
        let p = plan(int.clone(), &addr, None);
        assert_eq!(int.decode(&eval(&p, FrameKind::Call).unwrap()).1, Some(42));
        // DW_OP_reg6 (rbp), and DW_OP_lit5 DW_OP_stack_value.
        let p = plan(Scalar::Unsigned(8), &[0x56], None);
        assert_eq!(eval(&p, FrameKind::Call).unwrap(), 0x1000u64.to_le_bytes());
        let p = plan(int.clone(), &[0x35, 0x9f], None);
        assert_eq!(eval(&p, FrameKind::Call).unwrap(), 5i32.to_le_bytes());
        // Two 2-byte pieces: DW_OP_lit1 DW_OP_stack_value DW_OP_piece 2, DW_OP_reg6 DW_OP_piece 2.
        let p = plan(int.clone(), &[0x31, 0x9f, 0x93, 2, 0x56, 0x93, 2], None);
        assert_eq!(eval(&p, FrameKind::Call).unwrap(), vec![1, 0, 0, 0x10]);
    }

    #[test]
    fn what_cannot_be_known_is_optimized_out_or_an_error_never_a_value() {
        let int = Scalar::Signed(4);
        // rbx (DW_OP_reg3) not recovered in a caller: optimized out, as gdb says.
        let e = eval(&plan(int.clone(), &[0x53], None), FrameKind::Call).unwrap_err();
        assert!(e.optimized_out && e.message.contains("rbx"), "{e:?}");
        // xmm0 (DW_OP_regx 17) in the innermost frame: not captured, an error.
        let e = eval(
            &plan(Scalar::Float(8), &[0x90, 17], None),
            FrameKind::Innermost,
        )
        .unwrap_err();
        assert!(!e.optimized_out && e.message.contains("xmm0"), "{e:?}");
        // DW_OP_entry_value(DW_OP_reg5) DW_OP_stack_value.
        let e = eval(
            &plan(int.clone(), &[0xa3, 1, 0x55, 0x9f], None),
            FrameKind::Call,
        )
        .unwrap_err();
        assert!(
            e.optimized_out && e.message.contains("entry value"),
            "{e:?}"
        );
        // An empty piece, a bit piece, DW_OP_fbreg without a frame base, unreadable memory.
        let e = eval(&plan(int.clone(), &[0x93, 4], None), FrameKind::Call).unwrap_err();
        assert!(e.optimized_out, "{e:?}");
        let e = eval(
            &plan(int.clone(), &[0x56, 0x9d, 3, 0], None),
            FrameKind::Call,
        )
        .unwrap_err();
        assert!(
            !e.optimized_out && e.message.contains("bit pieces"),
            "{e:?}"
        );
        let e = eval(&plan(int.clone(), &[0x91, 0x70], None), FrameKind::Call).unwrap_err();
        assert!(e.message.contains("frame base"), "{e:?}");
        let e = eval(
            &plan(int.clone(), &[0x30, 0x06, 0x9f], None),
            FrameKind::Call,
        )
        .unwrap_err();
        assert!(e.message.contains("cannot read"), "{e:?}");
        // A piece of 4 GiB: refused before anything is allocated for it.
        let e = eval(
            &plan(
                int.clone(),
                &[0x56, 0x93, 0xff, 0xff, 0xff, 0xff, 0x0f],
                None,
            ),
            FrameKind::Call,
        )
        .unwrap_err();
        assert!(e.message.contains("larger than the type"), "{e:?}");
        // Garbage bytecode and truncated operands are errors.
        for garbage in [
            &[0xff][..],
            &[0x03, 1, 2],
            &[0x91],
            &[0x2f, 0xff, 0xff],
            &[],
        ] {
            let r = eval(&plan(int.clone(), garbage, None), FrameKind::Call);
            assert!(r.is_err(), "{garbage:?} gave {r:?}");
        }
    }
}
