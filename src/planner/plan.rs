//! `Plan`: how a query is answered — an access path producing candidates, then a finish step
//! that verifies and scores them. Shown by EXPLAIN.

use std::fmt;

/// The access paths, as named when forcing a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PlanKind {
    /// Decode every row and compare.
    FullScan,
    /// Count matching OPH bins (or 32-bit MinHash slots) column by column over the pages.
    OphBinScan,
    /// Look up LSH band buckets.
    LshProbe,
    /// Probe SimHash permuted tables.
    SimhashProbe,
}

impl PlanKind {
    /// Every kind, in EXPLAIN order.
    pub const ALL: [PlanKind; 4] =
        [PlanKind::FullScan, PlanKind::OphBinScan, PlanKind::LshProbe, PlanKind::SimhashProbe];

    /// The name used by EXPLAIN and `--plan`.
    pub fn name(self) -> &'static str {
        match self {
            PlanKind::FullScan => "full-scan",
            PlanKind::OphBinScan => "oph-bin-scan",
            PlanKind::LshProbe => "lsh-probe",
            PlanKind::SimhashProbe => "simhash-probe",
        }
    }

    /// Parses a name returned by [`PlanKind::name`].
    pub fn from_name(s: &str) -> Option<PlanKind> {
        PlanKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

impl fmt::Display for PlanKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// When the OPH bin scan may stop counting a row early.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum EarlyStop {
    /// Count every bin of every row.
    Never,
    /// Drop a row once even all remaining bins matching could not lift it to the threshold:
    /// exact with respect to the sketches.
    ExactBound,
    /// Also drop a row once the Clopper-Pearson upper bound of its match rate so far, at this
    /// confidence, is below the threshold: faster, may lose a qualifying row with probability
    /// about (1 - level) / 2 per row.
    Confidence(f64),
}

/// Where candidates come from.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Access {
    /// Every live row, decoded.
    FullScan,
    /// OPH bins counted column by column.
    OphBinScan {
        /// Early termination.
        early: EarlyStop,
    },
    /// LSH buckets of the first `bands` bands.
    LshProbe {
        /// Bands probed (at most the index's).
        bands: u32,
    },
    /// SimHash permuted tables.
    SimhashProbe {
        /// Tables probed.
        tables: u32,
    },
    /// Dedup only: the loaded signatures banded in memory (the banding an LSH index for the
    /// threshold would have) and joined bucket by bucket; for collections without an LSH
    /// index. Its kind is [`PlanKind::LshProbe`].
    LshBanding {
        /// Bands.
        bands: u32,
        /// Rows per band.
        rows: u32,
    },
    /// Dedup only: SimHash permuted tables built in memory over the loaded fingerprints
    /// (the design tables for this size and radius would get) and self-joined; exact, for
    /// collections without tables covering the radius. Its kind is
    /// [`PlanKind::SimhashProbe`].
    SimhashInMemory {
        /// Tables.
        tables: u32,
    },
}

impl Access {
    /// The access path's kind.
    pub fn kind(&self) -> PlanKind {
        match self {
            Access::FullScan => PlanKind::FullScan,
            Access::OphBinScan { .. } => PlanKind::OphBinScan,
            Access::LshProbe { .. } | Access::LshBanding { .. } => PlanKind::LshProbe,
            Access::SimhashProbe { .. } | Access::SimhashInMemory { .. } => PlanKind::SimhashProbe,
        }
    }

    /// The name EXPLAIN shows: the kind's name, except for the in-memory self-joins of a
    /// dedup (`lsh-banding`, `simhash-in-memory`), which are forced through their kind.
    pub fn label(&self) -> &'static str {
        match self {
            Access::LshBanding { .. } => "lsh-banding",
            Access::SimhashInMemory { .. } => "simhash-in-memory",
            _ => self.kind().name(),
        }
    }

    /// Whether the path returns every qualifying row (exact with respect to the sketches).
    pub fn is_exact(&self) -> bool {
        match self {
            Access::FullScan | Access::SimhashProbe { .. } | Access::SimhashInMemory { .. } => true,
            Access::OphBinScan { early } => !matches!(early, EarlyStop::Confidence(_)),
            Access::LshProbe { .. } | Access::LshBanding { .. } => false,
        }
    }
}

/// What happens to candidates: every result is verified with the estimator and scored.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Finish {
    /// Keep estimates >= the threshold, sorted by estimate descending.
    Verify {
        /// The threshold.
        threshold: f64,
    },
    /// Keep the k best.
    TopK {
        /// k.
        k: usize,
    },
    /// Keep fingerprints within the radius, sorted by distance.
    Radius {
        /// The radius, inclusive.
        radius: u32,
    },
}

/// A complete plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Where candidates come from.
    pub access: Access,
    /// How they are verified and scored.
    pub finish: Finish,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Access::FullScan => write!(f, "FullScan"),
            Access::OphBinScan { early: EarlyStop::Never } => write!(f, "OphBinScan(no early stop)"),
            Access::OphBinScan { early: EarlyStop::ExactBound } => write!(f, "OphBinScan(exact bound)"),
            Access::OphBinScan { early: EarlyStop::Confidence(l) } => write!(f, "OphBinScan(early stop at {l})"),
            Access::LshProbe { bands } => write!(f, "LshProbe(bands={bands})"),
            Access::SimhashProbe { tables } => write!(f, "SimhashProbe(tables={tables})"),
            Access::LshBanding { bands, rows } => write!(f, "LshBanding(bands={bands}, rows={rows}, in memory)"),
            Access::SimhashInMemory { tables } => write!(f, "SimhashInMemory(tables={tables})"),
        }
    }
}

impl fmt::Display for Finish {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finish::Verify { threshold } => write!(f, "Verify(estimate >= {threshold})"),
            Finish::TopK { k } => write!(f, "TopK({k})"),
            Finish::Radius { radius } => write!(f, "Radius(distance <= {radius})"),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {}", self.access, self.finish)
    }
}
