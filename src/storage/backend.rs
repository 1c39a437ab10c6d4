//! A small storage-backend trait of our own, adapted to redb's, so that tests (crash and I/O
//! fault injection) can run a database on custom storage without any redb type being public.

use std::fmt::Debug;
use std::io;

use parking_lot::RwLock;

/// Byte storage under a database: the five operations redb needs.
///
/// Mirrors redb's `StorageBackend`: `read` past the end is an error, `set_len` zero-fills
/// new space, and `sync_data` returns only once every prior write is durable.
pub trait Backend: Debug + Send + Sync + 'static {
    /// The current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Whether the storage is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Fills `out` from `offset`; an error if that runs past the end.
    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()>;
    /// Grows (zero-filled) or shrinks the storage.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Makes every prior write durable.
    fn sync_data(&self) -> io::Result<()>;
    /// Writes `data` at `offset`.
    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()>;
}

/// Wraps a [`Backend`] as a redb storage backend.
#[derive(Debug)]
pub(crate) struct RedbBackend<B: Backend>(pub B);

impl<B: Backend> redb::StorageBackend for RedbBackend<B> {
    fn len(&self) -> Result<u64, io::Error> {
        self.0.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        self.0.read(offset, out)
    }
    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> Result<(), io::Error> {
        self.0.sync_data()
    }
    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        self.0.write(offset, data)
    }
}

/// A backend in memory (for tests and fuzzing).
#[derive(Debug, Default)]
pub struct MemoryBackend {
    bytes: RwLock<Vec<u8>>,
}

impl MemoryBackend {
    /// An empty backend.
    pub fn new() -> Self {
        Self::default()
    }
}

fn out_of_range() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end of the memory backend")
}

impl Backend for MemoryBackend {
    fn len(&self) -> io::Result<u64> {
        Ok(self.bytes.read().len() as u64)
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let b = self.bytes.read();
        let start = usize::try_from(offset).map_err(|_| out_of_range())?;
        let src = b.get(start..start + out.len()).ok_or_else(out_of_range)?;
        out.copy_from_slice(src);
        Ok(())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| io::Error::other("length exceeds memory"))?;
        self.bytes.write().resize(len, 0);
        Ok(())
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut b = self.bytes.write();
        let start = usize::try_from(offset).map_err(|_| out_of_range())?;
        if b.len() < start + data.len() {
            b.resize(start + data.len(), 0);
        }
        b[start..start + data.len()].copy_from_slice(data);
        Ok(())
    }
}
