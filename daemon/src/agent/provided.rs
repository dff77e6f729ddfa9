//! Debug indexes arriving down the tree in pieces ([`Provide`]), put back together for the
//! symbolizer: only those this daemon asked for at setup, each piece in order and inside
//! the size it announced, the whole checked (checksum, tables, key) before it is used.

use std::collections::HashMap;

use strata_proto::overlay::{MAX_PROVIDED, Provide};

use crate::debug_index::DebugIndex;

/// The indexes asked for, and the bytes of each received so far.
#[derive(Debug, Default)]
pub struct Incoming {
    wanted: HashMap<String, Vec<u8>>,
}

impl Incoming {
    /// Waiting for these keys (those of an earlier setup are dropped).
    pub fn expecting(keys: impl IntoIterator<Item = String>) -> Incoming {
        Incoming {
            wanted: keys.into_iter().map(|k| (k, Vec::new())).collect(),
        }
    }

    /// Takes one piece: the index once its last piece is in and it checks out; nothing
    /// for a key not asked for (the tree sends every daemon every index); why, for a piece
    /// out of order or past its size, or an index that does not check (the key is then
    /// given up: the daemon reads the file system for it, as without the tree).
    pub fn piece(&mut self, piece: Provide) -> Result<Option<DebugIndex>, String> {
        let Some(have) = self.wanted.get_mut(&piece.key) else {
            return Ok(None);
        };
        let received = have.len() as u64;
        let end = received + piece.data.len() as u64;
        if piece.total > MAX_PROVIDED || piece.offset != received || end > piece.total {
            self.wanted.remove(&piece.key);
            return Err(format!(
                "debug index {} from the tree: bytes {}..{end} of {} do not follow the \
                 {received} received; not used",
                piece.key, piece.offset, piece.total
            ));
        }
        if have.is_empty() {
            have.reserve_exact(piece.total as usize);
        }
        have.extend_from_slice(&piece.data);
        if end < piece.total {
            return Ok(None);
        }
        let bytes = self.wanted.remove(&piece.key).unwrap_or_default();
        match DebugIndex::open(bytes) {
            Ok(index) if index.meta().key == piece.key => Ok(Some(index)),
            Ok(index) => Err(format!(
                "debug index {} from the tree holds {}: not used",
                piece.key,
                index.meta().key
            )),
            Err(e) => Err(format!(
                "debug index {} from the tree: {e}; not used",
                piece.key
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(key: &str, total: u64, offset: u64, data: &[u8]) -> Provide {
        Provide {
            key: key.into(),
            total,
            offset,
            data: data.to_vec(),
        }
    }

    #[test]
    fn an_index_not_asked_for_is_ignored() {
        let mut incoming = Incoming::expecting(["a".to_string()]);
        assert!(matches!(
            incoming.piece(piece("b", 4, 0, b"abcd")),
            Ok(None)
        ));
        assert!(incoming.wanted["a"].is_empty());
    }

    #[test]
    fn a_piece_out_of_order_or_past_its_size_gives_the_key_up() {
        let mut incoming = Incoming::expecting(["a".to_string(), "b".to_string()]);
        assert!(matches!(
            incoming.piece(piece("a", 8, 0, b"abcd")),
            Ok(None)
        ));
        let gap = incoming.piece(piece("a", 8, 6, b"gh")).unwrap_err();
        assert!(gap.contains("do not follow the 4 received"), "{gap}");
        // Given up: later pieces of it are ignored.
        assert!(matches!(
            incoming.piece(piece("a", 8, 4, b"efgh")),
            Ok(None)
        ));
        assert!(incoming.piece(piece("b", 2, 0, b"abc")).is_err());
        let mut incoming = Incoming::expecting(["c".to_string()]);
        assert!(
            incoming
                .piece(piece("c", MAX_PROVIDED + 1, 0, b"x"))
                .is_err()
        );
    }

    #[test]
    fn a_whole_index_that_does_not_check_is_not_used() {
        let mut incoming = Incoming::expecting(["a".to_string()]);
        assert!(matches!(
            incoming.piece(piece("a", 6, 0, b"not ")),
            Ok(None)
        ));
        let why = incoming.piece(piece("a", 6, 4, b"it")).unwrap_err();
        assert!(why.contains("debug index a from the tree"), "{why}");
        assert!(incoming.wanted.is_empty());
    }
}
