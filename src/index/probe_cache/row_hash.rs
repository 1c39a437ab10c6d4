//! The map the probe cache keeps records in, by row id, and its hash.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::storage::reader::RowRecord;

/// Kept records by row id: `None` for a row the index holds that is not live.
pub(crate) type RecordMap = HashMap<u64, Option<Arc<RowRecord>>, BuildHasherDefault<RowHasher>>;

/// The hash of a row id: one folded 64x64-bit multiply (row ids are the database's own
/// numbers, not input an attacker picks, so a keyed hash buys nothing; SipHash cost a warm
/// query more than its lookups).
#[derive(Default)]
pub(crate) struct RowHasher(u64);

impl Hasher for RowHasher {
    #[inline]
    fn write_u64(&mut self, row: u64) {
        let m = u128::from(row ^ self.0) * 0x9E37_79B9_7F4A_7C15;
        self.0 = (m >> 64) as u64 ^ m as u64;
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut a = [0u8; 8];
            a[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(a));
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}
