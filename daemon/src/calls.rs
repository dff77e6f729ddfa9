//! Which function a call instruction calls, by the symbol the dynamic linker binds it to:
//! how an MPI call is named when the library's own frames say nothing.
//!
//! A stripped MPI library (MPICH 5's and Intel MPI's wheels) often reaches its work by a
//! tail jump from the exported entry (`PMPI_Waitall` jumps into an internal function): the
//! entry has no frame of its own, and the frame below the program's is an unnamed or
//! internal one. (A known internal that names its call, such as Open MPI's
//! `ompi_mpi_finalize`, which `PMPI_Finalize` jumps to, needs nothing here:
//! `strata_filters::mpi` reads it as `MPI_Finalize`.) But the program
//! called the entry by name, through its PLT or GOT, and the relocation that binds the GOT
//! slot names the symbol. [`called_symbol`] decodes the call instruction before a return
//! address and follows it:
//!
//! * `call rel32` (`e8`) to a PLT stub: `[endbr64] [bnd] jmp *disp32(%rip)` (`ff 25`),
//!   whose GOT slot's relocation names the symbol (lazy `.plt` and `.plt.sec` alike);
//! * `call *disp32(%rip)` (`ff 15`, code built with `-fno-plt`): the GOT slot directly.
//!
//! Anything else (a call through a register, a direct call inside one image) names nothing.
//! The instructions are read from the image's file (code does not change at run time).

use crate::images::Image;

/// The dynamic symbol the call instruction that returns to `return_svma` (an address in
/// `image`) calls through the PLT or GOT, if it is such a call.
pub fn called_symbol(image: &Image, return_svma: u64) -> Option<&str> {
    // `call *disp32(%rip)`: 6 bytes.
    if let Some(code) = image.bytes_at(return_svma.checked_sub(6)?, 6)
        && code[0] == 0xff
        && code[1] == 0x15
    {
        let slot = relative(return_svma, &code[2..6]);
        return image.got_symbol(slot);
    }
    // `call rel32`: 5 bytes.
    let code = image.bytes_at(return_svma.checked_sub(5)?, 5)?;
    if code[0] != 0xe8 {
        return None;
    }
    plt_symbol(image, relative(return_svma, &code[1..5]))
}

/// The symbol a PLT stub at `stub` jumps to through its GOT slot.
fn plt_symbol(image: &Image, stub: u64) -> Option<&str> {
    let code = image.bytes_at(stub, 16)?;
    let mut at = 0;
    if code[..4] == [0xf3, 0x0f, 0x1e, 0xfa] {
        at = 4; // endbr64
    }
    if code[at] == 0xf2 {
        at += 1; // bnd
    }
    if code[at] != 0xff || code[at + 1] != 0x25 {
        return None;
    }
    let next = stub + at as u64 + 6;
    image.got_symbol(relative(next, &code[at + 2..at + 6]))
}

/// `base + disp32` (a little-endian signed displacement from the next instruction).
fn relative(base: u64, disp: &[u8]) -> u64 {
    let d = i32::from_le_bytes([disp[0], disp[1], disp[2], disp[3]]);
    base.wrapping_add_signed(i64::from(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displacements_are_signed_from_the_next_instruction() {
        assert_eq!(relative(0x1000, &[0x10, 0, 0, 0]), 0x1010);
        assert_eq!(relative(0x1000, &[0xf0, 0xff, 0xff, 0xff]), 0xff0);
    }
}
