//! [`FaultyBackend`]: a storage backend that simulates power loss and I/O failures.
//!
//! The file is modelled as two images and a log:
//!
//! * `durable`: what the disk holds for certain, as of the last completed `sync_data`;
//! * `current`: what the process reads back (the page cache: every write so far);
//! * `pending`: the writes and length changes issued since the last sync, in order.
//!
//! **Power loss.** A [`CrashPoint`] freezes the backend when the Nth `sync_data` is called
//! (that sync never completes) or just before the Nth write is applied. From then on every
//! operation fails, as if the process had died with the machine. [`FaultyBackend::crash_image`]
//! then builds what a disk could hold after the power came back: the durable image plus a
//! random subset of the pending writes, each kept whole, dropped or torn (a random subset of
//! its 512-byte sectors, or a prefix cut at any byte). Keeping any subset models reordering:
//! a later write may reach the disk while an earlier one does not. Writes that are kept are
//! applied in issue order, so an overlapping byte holds the newest kept value (the page cache
//! never writes stale data after fresh data). These are exactly the media assumptions the storage engine
//! documents (single-byte writes atomic, durable after fsync, powersafe overwrite).
//!
//! **I/O failures.** An [`IoFault`] fails the Nth call (any of `len`, `read`, `write`,
//! `set_len`, `sync_data`) or the write that crosses byte N of all writes (that write is
//! applied up to byte N: a short write), once or forever.

use std::fmt;
use std::io;
use std::sync::Arc;

use parking_lot::Mutex;

use super::rng::{Entropy, SplitMix};
use crate::storage::backend::Backend;

/// Where power is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashPoint {
    /// When `sync_data` is called for the Nth time (1-based); that sync never completes.
    AtSync(u64),
    /// Just before the Nth write (1-based) is applied.
    AtWrite(u64),
}

/// Which calls fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoFault {
    /// The Nth call (1-based, counting `len`, `read`, `write`, `set_len`, `sync_data`).
    AtCall {
        /// The call number.
        call: u64,
        /// Every call from then on fails too.
        persistent: bool,
    },
    /// The write that would take the total written past `bytes` is applied up to that byte
    /// and fails.
    AfterBytes {
        /// Bytes written successfully before the failure.
        bytes: u64,
        /// Every write and sync from then on fails too.
        persistent: bool,
    },
}

/// Counters of what the backend was asked to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Calls of any kind.
    pub calls: u64,
    /// `write` calls.
    pub writes: u64,
    /// `sync_data` calls.
    pub syncs: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Calls that failed because of an injected fault.
    pub faults: u64,
}

#[derive(Clone, Debug)]
enum Pending {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Read,
    Write,
    Modify,
}

#[derive(Debug, Default)]
struct State {
    durable: Vec<u8>,
    current: Vec<u8>,
    pending: Vec<Pending>,
    write_sizes: Vec<u64>,
    counters: IoCounters,
    crash: Option<CrashPoint>,
    crashed: bool,
    fault: Option<IoFault>,
    fault_fired: bool,
}

/// A backend for crash and I/O-fault tests; clones share one simulated file, so a test keeps
/// a clone to inspect the file after handing the backend to the database.
#[derive(Clone, Default)]
pub struct FaultyBackend {
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for FaultyBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("FaultyBackend")
            .field("len", &s.current.len())
            .field("pending", &s.pending.len())
            .field("counters", &s.counters)
            .field("crashed", &s.crashed)
            .finish()
    }
}

fn power_lost() -> io::Error {
    io::Error::other("simulated power loss: the backend is frozen")
}

fn injected() -> io::Error {
    io::Error::other("injected I/O failure")
}

fn to_usize(v: u64) -> io::Result<usize> {
    usize::try_from(v).map_err(|_| io::Error::other("offset exceeds memory"))
}

fn write_at(buf: &mut Vec<u8>, offset: usize, data: &[u8]) {
    let end = offset + data.len();
    if buf.len() < end {
        buf.resize(end, 0);
    }
    buf[offset..end].copy_from_slice(data);
}

impl FaultyBackend {
    /// An empty file with no faults.
    pub fn new() -> Self {
        Self::default()
    }

    /// A file whose durable and current contents are `bytes` (a crash image to reopen).
    pub fn from_image(bytes: Vec<u8>) -> Self {
        let b = Self::default();
        {
            let mut s = b.state.lock();
            s.current = bytes.clone();
            s.durable = bytes;
        }
        b
    }

    /// Sets (or clears) the power-loss point.
    pub fn set_crash(&self, crash: Option<CrashPoint>) {
        self.state.lock().crash = crash;
    }

    /// Sets (or clears) the I/O fault; clearing also lifts a persistent fault.
    pub fn set_fault(&self, fault: Option<IoFault>) {
        let mut s = self.state.lock();
        s.fault = fault;
        s.fault_fired = false;
    }

    /// Loses power now.
    pub fn crash_now(&self) {
        self.state.lock().crashed = true;
    }

    /// Whether power was lost.
    pub fn crashed(&self) -> bool {
        self.state.lock().crashed
    }

    /// What the backend was asked to do so far.
    pub fn counters(&self) -> IoCounters {
        self.state.lock().counters
    }

    /// The length of every write so far, in order.
    pub fn write_sizes(&self) -> Vec<u64> {
        self.state.lock().write_sizes.clone()
    }

    /// The file as of the last completed sync.
    pub fn durable_image(&self) -> Vec<u8> {
        self.state.lock().durable.clone()
    }

    /// The file as the process sees it (every write so far).
    pub fn current_image(&self) -> Vec<u8> {
        self.state.lock().current.clone()
    }

    /// A file a disk could hold after losing power now, drawn with `seed`: the durable image
    /// plus some of the pending writes, whole or torn (see the module docs). Seeds cycle
    /// through four strategies: drop every pending write, keep every one, keep a random
    /// subset (some torn), keep an in-order prefix with the next write torn.
    pub fn crash_image(&self, seed: u64) -> Vec<u8> {
        let s = self.state.lock();
        let mut rng = SplitMix::new(seed);
        let mut img = s.durable.clone();
        let n = s.pending.len();
        // keep[i]: 0 drop, 1 whole, 2 torn.
        let keep: Vec<u8> = match seed % 4 {
            0 => vec![0; n],
            1 => vec![1; n],
            2 => {
                let p_keep = rng.below(101) as f64 / 100.0;
                (0..n)
                    .map(|_| match rng.unit() {
                        x if x < p_keep * 0.8 => 1,
                        x if x < p_keep => 2,
                        _ => 0,
                    })
                    .collect()
            }
            _ => {
                let cut = rng.below(n as u64 + 1) as usize;
                (0..n).map(|i| u8::from(i < cut) + 2 * u8::from(i == cut)).collect()
            }
        };
        for (op, &k) in s.pending.iter().zip(&keep) {
            match (op, k) {
                (_, 0) => {}
                (Pending::SetLen(len), _) => {
                    if let Ok(len) = usize::try_from(*len) {
                        img.resize(len, 0);
                    }
                }
                (Pending::Write { offset, data }, k) => {
                    let Ok(offset) = usize::try_from(*offset) else { continue };
                    if k == 1 {
                        write_at(&mut img, offset, data);
                    } else if rng.below(2) == 0 {
                        // Prefix torn at any byte.
                        let cut = rng.below(data.len() as u64 + 1) as usize;
                        write_at(&mut img, offset, &data[..cut]);
                    } else {
                        // A random subset of the 512-byte sectors.
                        for (i, sector) in data.chunks(512).enumerate() {
                            if rng.below(2) == 0 {
                                write_at(&mut img, offset + i * 512, sector);
                            }
                        }
                    }
                }
            }
        }
        img
    }

    /// Counts a call and decides whether it fails (`bytes`: a write's length).
    /// Returns `Ok(None)` to go ahead, `Ok(Some(n))` to apply only `n` bytes of a write and
    /// then fail, `Err` to fail outright.
    fn enter(s: &mut State, call: Call, bytes: u64) -> io::Result<Option<usize>> {
        if s.crashed {
            return Err(power_lost());
        }
        s.counters.calls += 1;
        let number = s.counters.calls;
        match s.fault {
            Some(IoFault::AtCall { call: n, persistent }) if number == n || (persistent && number > n) => {
                s.counters.faults += 1;
                s.fault_fired = true;
                return Err(injected());
            }
            Some(IoFault::AtCall { .. }) => {}
            Some(IoFault::AfterBytes { bytes: n, persistent }) => {
                let before = s.counters.bytes_written;
                if s.fault_fired && persistent && call != Call::Read {
                    s.counters.faults += 1;
                    return Err(injected());
                }
                if call == Call::Write && !s.fault_fired && before + bytes > n {
                    s.counters.faults += 1;
                    s.fault_fired = true;
                    return Ok(Some(to_usize(n - before)?));
                }
            }
            None => {}
        }
        Ok(None)
    }

    fn do_write(s: &mut State, offset: u64, data: &[u8]) -> io::Result<()> {
        let o = to_usize(offset)?;
        write_at(&mut s.current, o, data);
        s.pending.push(Pending::Write { offset, data: data.to_vec() });
        s.counters.bytes_written += data.len() as u64;
        s.write_sizes.push(data.len() as u64);
        Ok(())
    }
}

impl Backend for FaultyBackend {
    fn len(&self) -> io::Result<u64> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::Read, 0)?;
        Ok(s.current.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::Read, 0)?;
        let start = to_usize(offset)?;
        let src = start
            .checked_add(out.len())
            .and_then(|end| s.current.get(start..end))
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))?;
        out.copy_from_slice(src);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::Modify, 0)?;
        let n = to_usize(len)?;
        s.current.resize(n, 0);
        s.pending.push(Pending::SetLen(len));
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut s = self.state.lock();
        if s.crashed {
            return Err(power_lost());
        }
        let n = s.counters.syncs + 1;
        if s.crash == Some(CrashPoint::AtSync(n)) {
            s.crashed = true;
            return Err(power_lost());
        }
        Self::enter(&mut s, Call::Modify, 0)?;
        s.counters.syncs = n;
        s.durable = s.current.clone();
        s.pending.clear();
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut s = self.state.lock();
        if s.crashed {
            return Err(power_lost());
        }
        if s.crash == Some(CrashPoint::AtWrite(s.counters.writes + 1)) {
            s.crashed = true;
            return Err(power_lost());
        }
        let short = Self::enter(&mut s, Call::Write, data.len() as u64)?;
        s.counters.writes += 1;
        match short {
            None => Self::do_write(&mut s, offset, data),
            Some(n) => {
                Self::do_write(&mut s, offset, &data[..n.min(data.len())])?;
                Err(injected())
            }
        }
    }
}
