//! Raw little-endian u64 SimHash fingerprints, no header, streamed 8 bytes at a time; the
//! key is the row index (`0`, `1`, ...).

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use super::check::Parse;
use super::detect::Stream;
use super::error::ReadError;
use super::read::Item;
use super::record::{Content, Origin, Position, Raw, SourceRecord, Summary};

pub(crate) struct U64s {
    path: Arc<Path>,
    reader: Stream,
    row: u64,
}

impl U64s {
    pub(crate) fn new(path: Arc<Path>, reader: Stream) -> Self {
        U64s { path, reader, row: 0 }
    }
}

impl Parse for U64s {
    fn next_parsed(&mut self, _: &mut Summary) -> Option<Item> {
        let mut buf = [0u8; 8];
        let mut filled = 0;
        while filled < 8 {
            match self.reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    let at = Origin::new(Arc::clone(&self.path), Position::Row(self.row));
                    return Some(Err(ReadError::Io { at, source }));
                }
            }
        }
        match filled {
            0 => None,
            8 => {
                let row = self.row;
                self.row += 1;
                Some(Ok(Ok(SourceRecord {
                    origin: Origin::new(Arc::clone(&self.path), Position::Row(row)),
                    id: None,
                    key: row.to_string(),
                    content: Content::Fingerprint(u128::from(u64::from_le_bytes(buf))),
                    raw: Raw::None,
                })))
            }
            n => Some(Err(ReadError::Truncated { path: self.path.to_path_buf(), bytes: self.row * 8 + n as u64 })),
        }
    }
}
