//! Sketch parameters: the kind, the hash family and its version, the seed and the widths.
//!
//! A `SketchParams` value fully determines how a sketch is computed from token hashes, so two
//! sketches are comparable exactly when their parameters are equal. Collections persist their
//! parameters; every comparison checks them field by field first.

use std::fmt;

use super::error::SketchError;

/// The largest number of permutations (MinHash, b-bit) or bins (OPH) a sketch may have.
pub const MAX_SLOTS: u32 = 4096;

/// The kinds of sketch sketchdb stores. The numeric codes are persisted: never renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u8)]
pub enum SketchKind {
    /// k independent permutations, the minimum of each (Broder).
    MinHash = 1,
    /// MinHash keeping only b bits of each minimum (Li and Koenig), plus the set's cardinality.
    BBitMinHash = 2,
    /// One Permutation Hashing: one permutation split into t bins, raw bin minima plus an
    /// empty-bin bitmap (Li, Owen and Zhang).
    Oph = 3,
    /// Charikar's random-hyperplane fingerprint over weighted features.
    SimHash = 4,
}

impl SketchKind {
    /// The persisted one-byte code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The kind for a persisted code, or `None` for an unknown code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(SketchKind::MinHash),
            2 => Some(SketchKind::BBitMinHash),
            3 => Some(SketchKind::Oph),
            4 => Some(SketchKind::SimHash),
            _ => None,
        }
    }

    /// A short lower-case name, as shown by the shell and in errors.
    pub fn name(self) -> &'static str {
        match self {
            SketchKind::MinHash => "minhash",
            SketchKind::BBitMinHash => "bbit",
            SketchKind::Oph => "oph",
            SketchKind::SimHash => "simhash",
        }
    }

    /// Parses the name returned by [`SketchKind::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        [SketchKind::MinHash, SketchKind::BBitMinHash, SketchKind::Oph, SketchKind::SimHash]
            .into_iter()
            .find(|k| k.name() == name)
    }
}

impl fmt::Display for SketchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The hash family that turns a 64-bit token hash into permuted values. Codes are persisted.
///
/// `MixMultiplyShift` (code 1), version 1, is specified in `storage-format.md` section
/// "Hash family" and in the `sketch` module's documentation: a seeded murmur3 `fmix64` pre-mix
/// followed by per-slot affine maps `a_i * x + b_i mod 2^64` with odd `a_i`.
///
/// The compatibility families (codes 2-6) reproduce other MinHash implementations bit for bit
/// (MinHash with 32 bits only; the seed is NumPy's `RandomState` seed, below 2^32); `Charikar`
/// (code 7) is the textbook SimHash (64 bits only). `storage-format.md` section 8.5 specifies
/// them. `MixMultiplyShift32` (code 8) is sketchdb's own family in 32-bit lanes, for MinHash
/// with 32-bit values and b-bit MinHash (section 8.3.1): the default of both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u16)]
pub enum HashFamily {
    /// fmix64 pre-mix then odd-multiplier affine maps modulo 2^64 (a bijection on u64).
    MixMultiplyShift = 1,
    /// datasketch's `legacy` scheme (every release before 2.0): `(a*h + b) mod (2^61 - 1)`,
    /// low 32 bits, `(a, b)` drawn per slot.
    DatasketchLegacy = 2,
    /// text-dedup's `minhash.py`: datasketch's arithmetic, all `a` drawn before all `b`.
    TextDedup = 3,
    /// text-dedup's `minhash_spark.py` (BigCode): uint32 `(a*h + b) mod (2^32 - 5)`.
    TextDedupSpark = 4,
    /// NeMo Curator's 32-bit GPU MinHash (cuDF `minhash`): uint32 `a*max(h, 1) + b`.
    NemoCurator = 5,
    /// datasketch 2.0's default `affine32` scheme: uint32 `a*fmix32(h) + b`, odd `a`.
    DatasketchAffine32 = 6,
    /// Charikar's SimHash as in the textbook: bit j of each feature's hash votes bit j.
    Charikar = 7,
    /// fmix64 pre-mix keeping its top 32 bits, then odd-multiplier affine maps modulo 2^32
    /// (eight or sixteen slots per vector multiply on AVX2 / AVX-512 machines).
    MixMultiplyShift32 = 8,
}

impl HashFamily {
    /// The version of the family this build computes. A sketch or collection recorded with
    /// another version is refused rather than silently compared.
    pub const CURRENT_VERSION: u16 = 1;

    /// The persisted code.
    pub fn code(self) -> u16 {
        self as u16
    }

    /// The family for a persisted code.
    pub fn from_code(code: u16) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.code() == code)
    }

    /// Every family, in code order.
    pub const ALL: [HashFamily; 8] = [
        HashFamily::MixMultiplyShift,
        HashFamily::DatasketchLegacy,
        HashFamily::TextDedup,
        HashFamily::TextDedupSpark,
        HashFamily::NemoCurator,
        HashFamily::DatasketchAffine32,
        HashFamily::Charikar,
        HashFamily::MixMultiplyShift32,
    ];

    /// A short lower-case name, as shown.
    pub fn name(self) -> &'static str {
        match self {
            HashFamily::MixMultiplyShift => "mix-multiply-shift",
            HashFamily::DatasketchLegacy => "datasketch-legacy",
            HashFamily::TextDedup => "text-dedup",
            HashFamily::TextDedupSpark => "text-dedup-spark",
            HashFamily::NemoCurator => "nemo-curator",
            HashFamily::DatasketchAffine32 => "datasketch-affine32",
            HashFamily::Charikar => "charikar",
            HashFamily::MixMultiplyShift32 => "mix-multiply-shift-32",
        }
    }

    /// Parses [`HashFamily::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether this family reproduces another implementation's MinHash (codes 2-6).
    pub fn is_compat(self) -> bool {
        !matches!(self, HashFamily::MixMultiplyShift | HashFamily::Charikar | HashFamily::MixMultiplyShift32)
    }
}

impl fmt::Display for HashFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything that determines a sketch: kind, hash family and version, seed, size and width.
///
/// * MinHash: `size` = k permutations (1..=4096), `bits` = 32 or 64 per stored minimum.
/// * b-bit MinHash: `size` = k (1..=4096), `bits` = b in {1, 2, 4, 8, 16, 32}; `universe` is
///   D in Li and Koenig's r = |X| / D (`None` means D = 2^64, right for hashed tokens).
/// * OPH: `size` = t bins (1..=4096), `bits` = 8, 16 or 32 per stored bin value.
/// * SimHash: `size` = `bits` = fingerprint width f, 64 or 128.
///
/// Construct through the per-kind constructors, which validate. Values decoded from storage
/// must be checked with [`SketchParams::validate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SketchParams {
    kind: SketchKind,
    family: HashFamily,
    family_version: u16,
    seed: u64,
    size: u32,
    bits: u8,
    universe: Option<u64>,
}

/// The default seed used by the shell and examples when none is given.
pub const DEFAULT_SEED: u64 = 0x5eed_5ce7_c4db_0001;

impl SketchParams {
    /// The value of the given fields, unvalidated (the codec's wire struct decodes through
    /// it): check with [`SketchParams::validate`].
    pub(crate) fn from_parts(
        kind: SketchKind,
        family: HashFamily,
        family_version: u16,
        seed: u64,
        size: u32,
        bits: u8,
        universe: Option<u64>,
    ) -> Self {
        SketchParams { kind, family, family_version, seed, size, bits, universe }
    }

    fn new(kind: SketchKind, seed: u64, size: u32, bits: u8, universe: Option<u64>) -> Result<Self, SketchError> {
        let p = SketchParams {
            kind,
            family: HashFamily::MixMultiplyShift,
            family_version: HashFamily::CURRENT_VERSION,
            seed,
            size,
            bits,
            universe,
        };
        p.validate()?;
        Ok(p)
    }

    /// MinHash with `k` permutations storing `bits` (32 or 64) per minimum.
    pub fn minhash(k: u32, bits: u8, seed: u64) -> Result<Self, SketchError> {
        Self::new(SketchKind::MinHash, seed, k, bits, None)
    }

    /// b-bit MinHash with `k` permutations keeping `b` bits of each minimum; D = 2^64.
    pub fn bbit(k: u32, b: u8, seed: u64) -> Result<Self, SketchError> {
        Self::new(SketchKind::BBitMinHash, seed, k, b, None)
    }

    /// b-bit MinHash over a universe of `universe` = D distinct values (r = |X| / D).
    pub fn bbit_with_universe(k: u32, b: u8, universe: u64, seed: u64) -> Result<Self, SketchError> {
        Self::new(SketchKind::BBitMinHash, seed, k, b, Some(universe))
    }

    /// One Permutation Hashing with `bins` bins storing `bits` (8, 16 or 32) per bin.
    pub fn oph(bins: u32, bits: u8, seed: u64) -> Result<Self, SketchError> {
        Self::new(SketchKind::Oph, seed, bins, bits, None)
    }

    /// SimHash fingerprints of `bits` (64 or 128) bits.
    pub fn simhash(bits: u8, seed: u64) -> Result<Self, SketchError> {
        Self::new(SketchKind::SimHash, seed, u32::from(bits), bits, None)
    }

    /// The textbook (Charikar) 64-bit SimHash: bit j of the fingerprint is the sign of the
    /// weighted votes of bit j of each feature's own 64-bit hash, with no re-mixing, so a
    /// fingerprint computed elsewhere from the same feature hashes matches bit for bit. It has
    /// no seed (recorded as 0).
    ///
    /// ```
    /// use sketchdb::{HashFamily, SketchParams, Sketcher};
    ///
    /// let params = SketchParams::simhash_charikar()?;
    /// assert_eq!(params.family(), HashFamily::Charikar);
    /// // Two features of weight 1 and one of weight 3: the heavy one decides every bit.
    /// let s = Sketcher::new(params)?.sketch_weighted(&[(0b1100, 1.0), (0b1010, 1.0), (0b0110, 3.0)])?;
    /// let sketchdb::Sketch::SimHash(fp) = s else { unreachable!() };
    /// assert_eq!(fp.value(), 0b0110);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn simhash_charikar() -> Result<Self, SketchError> {
        Self::of_family(SketchKind::SimHash, HashFamily::Charikar, 0, 64, 64)
    }

    /// MinHash with `k` permutations of a compatibility `family` (32-bit values) drawn from
    /// NumPy's `RandomState(seed)`: the signatures equal that implementation's (see
    /// [`HashFamily`]).
    ///
    /// ```
    /// use sketchdb::{HashFamily, SketchParams};
    ///
    /// let p = SketchParams::compat(HashFamily::DatasketchLegacy, 128, 1)?;
    /// assert_eq!((p.size(), p.bits()), (128, 32));
    /// assert!(SketchParams::compat(HashFamily::TextDedup, 250, 1 << 32).is_err()); // NumPy seeds are 32-bit
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn compat(family: HashFamily, k: u32, seed: u64) -> Result<Self, SketchError> {
        Self::of_family(SketchKind::MinHash, family, seed, k, 32)
    }

    /// These parameters computed by another of sketchdb's own families: `MixMultiplyShift`,
    /// `MixMultiplyShift32` and `Charikar` give the same kind, size and width with other
    /// values. The 32-bit lane family takes MinHash with 32-bit values and b-bit MinHash only;
    /// `Charikar` takes 64-bit SimHash only and has no seed, so its parameters record seed 0
    /// ([`SketchParams::simhash_charikar`]) and keep it when changed back. The compatibility
    /// families come with [`SketchParams::compat`].
    ///
    /// ```
    /// use sketchdb::{HashFamily, SketchParams};
    ///
    /// let p = SketchParams::minhash(128, 32, 7)?.with_family(HashFamily::MixMultiplyShift32)?;
    /// assert_eq!(p.family(), HashFamily::MixMultiplyShift32);
    /// assert!(SketchParams::minhash(128, 64, 7)?.with_family(HashFamily::MixMultiplyShift32).is_err());
    /// assert!(SketchParams::oph(128, 8, 7)?.with_family(HashFamily::MixMultiplyShift32).is_err());
    /// let c = SketchParams::simhash(64, 7)?.with_family(HashFamily::Charikar)?;
    /// assert_eq!(c, SketchParams::simhash_charikar()?);
    /// assert!(SketchParams::simhash(128, 7)?.with_family(HashFamily::Charikar).is_err());
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn with_family(self, family: HashFamily) -> Result<Self, SketchError> {
        let own = [HashFamily::MixMultiplyShift, HashFamily::MixMultiplyShift32, HashFamily::Charikar];
        if !own.contains(&self.family) || !own.contains(&family) {
            return Err(SketchError::invalid(
                "family",
                family,
                "mix-multiply-shift, mix-multiply-shift-32 or charikar in place of another of them",
            ));
        }
        let seed = if family == HashFamily::Charikar { 0 } else { self.seed };
        let p = SketchParams { family, seed, ..self };
        p.validate()?;
        Ok(p)
    }

    fn of_family(kind: SketchKind, family: HashFamily, seed: u64, size: u32, bits: u8) -> Result<Self, SketchError> {
        let p = SketchParams {
            kind,
            family,
            family_version: HashFamily::CURRENT_VERSION,
            seed,
            size,
            bits,
            universe: None,
        };
        p.validate()?;
        Ok(p)
    }

    /// Checks every field against the kind's allowed ranges and the family version against
    /// the one this build computes.
    pub fn validate(&self) -> Result<(), SketchError> {
        if self.family_version != HashFamily::CURRENT_VERSION {
            return Err(SketchError::invalid(
                "family_version",
                self.family_version,
                "the hash family version this build computes (1)",
            ));
        }
        let slots_ok = (1..=MAX_SLOTS).contains(&self.size);
        match self.kind {
            SketchKind::MinHash => {
                if !slots_ok {
                    return Err(SketchError::invalid("k", self.size, "1..=4096 permutations"));
                }
                if !matches!(self.bits, 32 | 64) {
                    return Err(SketchError::invalid("bits", self.bits, "32 or 64 bits per minimum"));
                }
            }
            SketchKind::BBitMinHash => {
                if !slots_ok {
                    return Err(SketchError::invalid("k", self.size, "1..=4096 permutations"));
                }
                if !matches!(self.bits, 1 | 2 | 4 | 8 | 16 | 32) {
                    return Err(SketchError::invalid("b", self.bits, "one of 1, 2, 4, 8, 16, 32"));
                }
                if self.universe == Some(0) {
                    return Err(SketchError::invalid("universe", 0, "a universe size D >= 1"));
                }
            }
            SketchKind::Oph => {
                if !slots_ok {
                    return Err(SketchError::invalid("bins", self.size, "1..=4096 bins"));
                }
                if !matches!(self.bits, 8 | 16 | 32) {
                    return Err(SketchError::invalid("bits", self.bits, "8, 16 or 32 bits per bin"));
                }
            }
            SketchKind::SimHash => {
                if !matches!(self.bits, 64 | 128) || self.size != u32::from(self.bits) {
                    return Err(SketchError::invalid("bits", self.bits, "64 or 128 fingerprint bits"));
                }
            }
        }
        if self.family.is_compat() {
            if self.kind != SketchKind::MinHash || self.bits != 32 {
                return Err(SketchError::invalid(
                    "family",
                    self.family,
                    "a compatibility family computes 32-bit MinHash only",
                ));
            }
            if self.seed > u64::from(u32::MAX) {
                return Err(SketchError::invalid("seed", self.seed, "a NumPy RandomState seed, 0..=4294967295"));
            }
        }
        let lanes32 = match self.kind {
            SketchKind::MinHash => self.bits == 32,
            SketchKind::BBitMinHash => true,
            _ => false,
        };
        if self.family == HashFamily::MixMultiplyShift32 && !lanes32 {
            return Err(SketchError::invalid(
                "family",
                self.family,
                "the 32-bit lane family computes MinHash with 32-bit values and b-bit MinHash only",
            ));
        }
        if self.family == HashFamily::Charikar && (self.kind != SketchKind::SimHash || self.bits != 64) {
            return Err(SketchError::invalid(
                "family",
                self.family,
                "the Charikar family computes 64-bit SimHash only",
            ));
        }
        if self.kind != SketchKind::BBitMinHash && self.universe.is_some() {
            return Err(SketchError::invalid(
                "universe",
                format!("{:?}", self.universe),
                "only b-bit MinHash takes a universe",
            ));
        }
        Ok(())
    }

    /// Fails with a typed error naming the first field in which `self` and `other` differ.
    pub fn check_compatible(&self, other: &SketchParams) -> Result<(), SketchError> {
        if self.kind != other.kind {
            return Err(SketchError::incompatible("kind", self.kind, other.kind));
        }
        if self.family != other.family {
            return Err(SketchError::incompatible("family", self.family, other.family));
        }
        if self.family_version != other.family_version {
            return Err(SketchError::incompatible("family_version", self.family_version, other.family_version));
        }
        if self.seed != other.seed {
            return Err(SketchError::incompatible("seed", format!("{:#x}", self.seed), format!("{:#x}", other.seed)));
        }
        if self.size != other.size {
            let name = match self.kind {
                SketchKind::Oph => "bins",
                _ => "k",
            };
            return Err(SketchError::incompatible(name, self.size, other.size));
        }
        if self.bits != other.bits {
            let name = if self.kind == SketchKind::BBitMinHash { "b" } else { "bits" };
            return Err(SketchError::incompatible(name, self.bits, other.bits));
        }
        if self.universe != other.universe {
            let show = |u: Option<u64>| u.map_or_else(|| "2^64".to_string(), |d| d.to_string());
            return Err(SketchError::incompatible("universe", show(self.universe), show(other.universe)));
        }
        Ok(())
    }

    /// The sketch kind.
    pub fn kind(&self) -> SketchKind {
        self.kind
    }
    /// The hash family.
    pub fn family(&self) -> HashFamily {
        self.family
    }
    /// The hash family's version.
    pub fn family_version(&self) -> u16 {
        self.family_version
    }
    /// The seed of the hash family.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// k permutations (MinHash, b-bit), t bins (OPH) or f bits (SimHash).
    pub fn size(&self) -> u32 {
        self.size
    }
    /// The number of slots as a `usize` (k, t, or for SimHash the number of 64-bit words).
    pub fn slots(&self) -> usize {
        match self.kind {
            SketchKind::SimHash => self.size as usize / 64,
            _ => self.size as usize,
        }
    }
    /// Stored bits per value: 32/64 (MinHash), b (b-bit), 8/16/32 (OPH), f (SimHash).
    pub fn bits(&self) -> u8 {
        self.bits
    }
    /// The universe size D for b-bit MinHash; `None` means 2^64.
    pub fn universe(&self) -> Option<u64> {
        self.universe
    }
    /// D as a float (2^64 when unset).
    pub fn universe_f64(&self) -> f64 {
        self.universe.map_or(18_446_744_073_709_551_616.0, |d| d as f64)
    }
}

impl fmt::Display for SketchParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            SketchKind::MinHash => write!(f, "minhash(k={}, bits={}", self.size, self.bits)?,
            SketchKind::BBitMinHash => write!(f, "bbit(k={}, b={}", self.size, self.bits)?,
            SketchKind::Oph => write!(f, "oph(bins={}, bits={}", self.size, self.bits)?,
            SketchKind::SimHash => write!(f, "simhash(bits={}", self.bits)?,
        }
        if let Some(d) = self.universe {
            write!(f, ", universe={d}")?;
        }
        write!(f, ", seed={:#x}, family={} v{})", self.seed, self.family, self.family_version)
    }
}
