//! Pure key derivation: SimHash block permutations and prefixes ([`simhash_design`]) and LSH
//! band keys with a fixed, versioned hash ([`band`]). Everything here is persisted by the
//! storage layer, so every byte and bit is specified in the item docs.

pub(crate) mod band;
pub(crate) mod simhash_design;
