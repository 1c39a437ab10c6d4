//! The configuration of a signature Parquet (`sketchdb.spark dedup`'s `signatures/`): read from
//! the file's key-value metadata, or given as flags, and turned into the collection that stores
//! exactly those signatures.
//!
//! The metadata value (key [`META_KEY`]) is one JSON object, written by the pipeline:
//! `{"version":1,"kind":"minhash"|"bbit"|"oph","k":u32,"bits":u8,"seed":u64,
//! "family":"mix-multiply-shift"|..,"recipe":NAME|null,"shingle":u32|null,"ngram":u32|null,
//! "token_seed":u64,"threshold":f64,"bands":u32,"rows":u32,"signature_width":u32}`.
//! Every field but `version` and `kind` may be missing (the flags' defaults then apply).

use clap::Args;
use serde::Deserialize;
use sketchdb::recipes::{DEFAULT_SEED, DEFAULT_SHINGLE_WORDS, DEFAULT_TOKEN_SEED, default_params};
use sketchdb::{CollectionConfig, HashFamily, IndexConfig, Recipe, SketchKind, SketchParams, Tokenizer};

/// The key-value metadata key of the configuration (top-level in the Parquet footer, or as
/// the field metadata of the `signature` column inside Spark's schema, see
/// [`SPARK_ROW_METADATA`]).
pub const META_KEY: &str = "sketchdb.signatures";
/// The footer key under which Spark keeps its schema (with each field's metadata) as JSON.
pub const SPARK_ROW_METADATA: &str = "org.apache.spark.sql.parquet.row.metadata";
/// The metadata version this build reads.
pub const META_VERSION: u64 = 1;

/// The configuration of a signature file, field by field (`None`: not stated).
#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
pub struct SignatureSpec {
    pub version: Option<u64>,
    pub kind: Option<String>,
    pub k: Option<u32>,
    pub bits: Option<u8>,
    pub seed: Option<u64>,
    pub family: Option<String>,
    pub recipe: Option<String>,
    pub shingle: Option<u32>,
    pub ngram: Option<u32>,
    pub token_seed: Option<u64>,
    pub threshold: Option<f64>,
    pub bands: Option<u32>,
    pub rows: Option<u32>,
    pub signature_width: Option<u32>,
}

/// The configuration flags of `import` for a signature Parquet: they state what the file's
/// metadata does not; where both state a field they must agree.
#[derive(Args, Debug, Clone, Default)]
pub struct SpecArgs {
    /// Sketch kind of the signatures: minhash, bbit or oph [Parquet; default: the file's, else minhash].
    #[arg(long, help_heading = "Signature Parquet")]
    pub kind: Option<String>,
    /// Permutations or bins [default: the file's, else 128].
    #[arg(long, help_heading = "Signature Parquet")]
    pub k: Option<u32>,
    /// Bits per value [default: the file's, else the kind's default].
    #[arg(long, help_heading = "Signature Parquet")]
    pub bits: Option<u8>,
    /// Seed of the hash family [default: the file's, else sketchdb's].
    #[arg(long, help_heading = "Signature Parquet")]
    pub seed: Option<u64>,
    /// Hash family (checked against the recipe's).
    #[arg(long, help_heading = "Signature Parquet")]
    pub family: Option<String>,
    /// Text recipe the signatures were made with.
    #[arg(long, help_heading = "Signature Parquet")]
    pub recipe: Option<String>,
    /// Words per shingle (without a recipe).
    #[arg(long, help_heading = "Signature Parquet")]
    pub shingle: Option<u32>,
    /// Character n-grams (without a recipe).
    #[arg(long, help_heading = "Signature Parquet")]
    pub ngram: Option<u32>,
    /// Seed of the token hash (without a recipe).
    #[arg(long, help_heading = "Signature Parquet")]
    pub token_seed: Option<u64>,
    /// LSH threshold of the collection's index [default: the file's, else 0.8].
    #[arg(long, help_heading = "Signature Parquet")]
    pub lsh: Option<f64>,
    /// LSH bands [default: the file's, else chosen for the threshold].
    #[arg(long, help_heading = "Signature Parquet")]
    pub bands: Option<u32>,
    /// LSH rows per band [default: the file's, else chosen for the threshold].
    #[arg(long, help_heading = "Signature Parquet")]
    pub rows: Option<u32>,
}

impl SpecArgs {
    /// Whether any flag is given.
    pub fn any(&self) -> bool {
        self.as_spec() != SignatureSpec::default()
    }

    fn as_spec(&self) -> SignatureSpec {
        SignatureSpec {
            version: None,
            kind: self.kind.clone(),
            k: self.k,
            bits: self.bits,
            seed: self.seed,
            family: self.family.clone(),
            recipe: self.recipe.clone(),
            shingle: self.shingle,
            ngram: self.ngram,
            token_seed: self.token_seed,
            threshold: self.lsh,
            bands: self.bands,
            rows: self.rows,
            signature_width: None,
        }
    }
}

impl SignatureSpec {
    /// The spec of a metadata value (`what` names where it came from, for errors).
    pub fn from_json(text: &str, what: &str) -> Result<SignatureSpec, String> {
        let spec: SignatureSpec =
            serde_json::from_str(text).map_err(|e| format!("{what}: malformed `{META_KEY}` metadata: {e}"))?;
        match spec.version {
            Some(META_VERSION) => Ok(spec),
            Some(v) => Err(format!("{what}: `{META_KEY}` metadata version {v} (this build reads {META_VERSION})")),
            None => Err(format!("{what}: `{META_KEY}` metadata without a `version`")),
        }
    }

    /// This spec with the flags' fields: a flag the file also states must agree with it.
    pub fn merge(mut self, flags: &SpecArgs, what: &str) -> Result<SignatureSpec, String> {
        let f = flags.as_spec();
        fn take<T: PartialEq + std::fmt::Debug + Clone>(
            mine: &mut Option<T>,
            flag: &Option<T>,
            name: &str,
            what: &str,
        ) -> Result<(), String> {
            match (mine.as_ref(), flag) {
                (Some(a), Some(b)) if a != b => {
                    Err(format!("--{name} {b:?} does not match {what}, whose signatures have {name} = {a:?}"))
                }
                (_, Some(b)) => {
                    *mine = Some(b.clone());
                    Ok(())
                }
                _ => Ok(()),
            }
        }
        // The metadata states the tokenizer whole: a null recipe, shingle or ngram there
        // is a statement too.
        if self.version.is_some() {
            let file = (&self.recipe, &self.shingle, &self.ngram);
            for (name, flag, mine) in [
                ("recipe", f.recipe.as_ref().map(|r| format!("{r:?}")), file.0.as_ref().map(|r| format!("{r:?}"))),
                ("shingle", f.shingle.map(|w| w.to_string()), file.1.map(|w| w.to_string())),
                ("ngram", f.ngram.map(|n| n.to_string()), file.2.map(|n| n.to_string())),
            ] {
                if let Some(flag) = flag
                    && Some(&flag) != mine.as_ref()
                {
                    let mine = mine.unwrap_or_else(|| "none".into());
                    return Err(format!(
                        "--{name} {flag} does not match {what}, whose signatures have {name} = {mine}"
                    ));
                }
            }
        }
        take(&mut self.kind, &f.kind, "kind", what)?;
        take(&mut self.k, &f.k, "k", what)?;
        take(&mut self.bits, &f.bits, "bits", what)?;
        take(&mut self.seed, &f.seed, "seed", what)?;
        take(&mut self.family, &f.family, "family", what)?;
        take(&mut self.recipe, &f.recipe, "recipe", what)?;
        take(&mut self.shingle, &f.shingle, "shingle", what)?;
        take(&mut self.ngram, &f.ngram, "ngram", what)?;
        take(&mut self.token_seed, &f.token_seed, "token-seed", what)?;
        take(&mut self.threshold, &f.threshold, "lsh", what)?;
        take(&mut self.bands, &f.bands, "bands", what)?;
        take(&mut self.rows, &f.rows, "rows", what)?;
        Ok(self)
    }

    /// The collection that stores these signatures: the parameters the pipeline's kernels
    /// sketched with (a compatibility recipe brings its family, and its own seed when the seed
    /// is sketchdb's default, as the Python package resolves it), the recipe's or the stated
    /// tokenizer, and an LSH index with the stated banding.
    pub fn config(&self) -> Result<CollectionConfig, String> {
        let kind_name = self.kind.as_deref().unwrap_or("minhash");
        let kind = SketchKind::from_name(kind_name)
            .filter(|k| *k != SketchKind::SimHash)
            .ok_or_else(|| format!("sketch kind `{kind_name}`: signatures are banded, so minhash, bbit or oph"))?;
        let k = self.k.unwrap_or(128);
        let seed = self.seed.unwrap_or(DEFAULT_SEED);
        let recipe = self.recipe.as_deref().map(Recipe::preset).transpose().map_err(|e| e.to_string())?;
        let mut params = match recipe.filter(|r| r.family().is_compat()) {
            Some(r) => {
                if kind != SketchKind::MinHash || self.bits.is_some_and(|b| b != 32) {
                    return Err(format!(
                        "recipe `{}` reproduces {}'s 32-bit MinHash: kind {kind_name} with {:?} bits cannot be its \
                         signatures",
                        r.name(),
                        r.family(),
                        self.bits
                    ));
                }
                let preset = if seed == DEFAULT_SEED { r.compat_params(Some(k)) } else { Ok(None) };
                match preset.map_err(|e| e.to_string())? {
                    Some(p) => p,
                    None => SketchParams::compat(r.family(), k, seed).map_err(|e| e.to_string())?,
                }
            }
            None => default_params(kind, k, self.bits, seed).map_err(|e| e.to_string())?,
        };
        if let Some(name) = &self.family {
            let family = HashFamily::from_name(name).ok_or_else(|| format!("unknown hash family `{name}`"))?;
            // sketchdb's two own families compute the same kinds: either may be named.
            if family != params.family()
                && let Ok(other) = params.with_family(family)
            {
                params = other;
            }
            if family != params.family() {
                return Err(format!(
                    "hash family `{name}` does not match the recipe's: {} {} signatures use `{}`",
                    self.recipe.as_deref().unwrap_or("sketchdb"),
                    kind_name,
                    params.family()
                ));
            }
        }
        if let Some(bits) = self.bits
            && bits != params.bits()
        {
            return Err(format!("bits = {bits}, but {kind_name} signatures of this recipe have {}", params.bits()));
        }
        let tokenizer = match (recipe, self.shingle, self.ngram) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err("a recipe sets the tokenizer: give it or shingle/ngram, not both".into());
            }
            (_, Some(_), Some(_)) => return Err("give shingle or ngram, not both".into()),
            (Some(r), None, None) => Ok(r.tokenizer()),
            (None, _, Some(n)) => Tokenizer::char_ngrams(n, self.token_seed.unwrap_or(DEFAULT_TOKEN_SEED)),
            (None, w, None) => {
                Tokenizer::shingles(w.unwrap_or(DEFAULT_SHINGLE_WORDS), self.token_seed.unwrap_or(DEFAULT_TOKEN_SEED))
            }
        }
        .map_err(|e| e.to_string())?;
        let index = IndexConfig::Lsh { threshold: self.threshold.unwrap_or(0.8), bands: self.bands, rows: self.rows };
        let config = CollectionConfig::new(params).with_tokenizer(tokenizer).with_index(index);
        config.validate().map_err(|e| e.to_string())?;
        if let Some(w) = self.signature_width {
            let need = sketchdb::signature::width(&params);
            if need != w as usize {
                return Err(format!("signature_width = {w}, but {params} signatures are {need} bytes"));
            }
        }
        Ok(config)
    }
}
