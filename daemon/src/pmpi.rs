//! A rank's state as strata's PMPI library publishes it (`libstrata_pmpi.so`, laid out by
//! [`strata_pmpi_layout`]), read from the rank's memory without stopping it.
//!
//! The library is found among the rank's mappings by its file name, the state by its
//! exported symbol; the copy is decoded, read again when the rank was writing it, and the
//! communicator's members followed where the state points to them.

use crate::images::AddressSpace;
use crate::memory::MemoryReader;
use strata_pmpi_layout::{self as pmpi, CommWord, LayoutError, PmpiState};

/// The library's file name starts so (`strata run` writes it under a versioned name).
pub const LIBRARY_PREFIX: &str = "libstrata_pmpi";

/// How often a torn copy is read again before giving up.
const TRIES: usize = 64;

/// What was read of one rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmpiRead {
    pub state: PmpiState,
    /// The call's communicator's members as world ranks (with [`CommWord::Members`]).
    pub members: Vec<u32>,
}

/// The state of the rank whose executable mappings are `space`, read through `memory`;
/// `None` when the rank has not loaded the library, an error saying why it could not be
/// read otherwise (another layout version, an unreadable page).
pub fn read(space: &AddressSpace, memory: &dyn MemoryReader) -> Option<Result<PmpiRead, String>> {
    let m = space
        .mappings
        .iter()
        .find(|m| m.short_name().starts_with(LIBRARY_PREFIX))?;
    Some(read_from(m, memory))
}

fn read_from(
    m: &crate::images::MappedImage,
    memory: &dyn MemoryReader,
) -> Result<PmpiRead, String> {
    let image = m
        .image()
        .ok_or_else(|| format!("{}: {}", m.path, m.image.as_ref().err().unwrap()))?;
    let svma = image
        .data_symbol_address(pmpi::SYMBOL)
        .ok_or_else(|| format!("{} exports no {}", m.path, pmpi::SYMBOL))?;
    let address = svma.wrapping_add(m.bias);
    let mut bytes = [0u8; pmpi::BYTES];
    let mut state = None;
    for _ in 0..TRIES {
        memory
            .read(address, &mut bytes)
            .map_err(|e| format!("reading the PMPI state: {e}"))?;
        match pmpi::decode(&bytes) {
            Err(LayoutError::Torn) => std::thread::yield_now(),
            other => {
                state = Some(other.map_err(|e| e.to_string())?);
                break;
            }
        }
    }
    let state = state.ok_or_else(|| LayoutError::Torn.to_string())?;
    let members = match state.communicator {
        Some(CommWord::Members { size, address }) => {
            if size == 0 || size > pmpi::MAX_MEMBERS {
                return Err(format!("a communicator of {size} members"));
            }
            let mut raw = vec![0u8; size as usize * 4];
            memory
                .read(address, &mut raw)
                .map_err(|e| format!("reading the communicator's members: {e}"))?;
            raw.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        }
        _ => Vec::new(),
    };
    Ok(PmpiRead { state, members })
}
