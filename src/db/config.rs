//! Collection configuration: sketch parameters, tokenizer and index settings.

use serde::{Deserialize, Serialize};

use crate::codec::meta::{from_postcard, to_postcard};
use crate::error::Error;
use crate::sketch::params::SketchParams;
use crate::sketch::tokenize::Tokenizer;
use crate::storage::StorageError;

/// Which index a collection maintains besides its columnar pages.
///
/// Persisted (postcard, inside the collection definition): variants may only be appended,
/// never reordered. A build that meets a variant it does not know refuses the collection
/// with a typed error rather than guessing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum IndexConfig {
    /// No index: queries scan the columnar pages.
    #[default]
    None,
}

/// How a collection is configured: fixed when it is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CollectionConfig {
    /// The sketch kind and parameters every record has.
    pub params: SketchParams,
    /// How `insert_text` cuts text into tokens.
    pub tokenizer: Tokenizer,
    /// The index settings.
    pub index: IndexConfig,
}

impl CollectionConfig {
    /// A configuration with `params`, the default tokenizer and no index.
    pub fn new(params: SketchParams) -> Self {
        CollectionConfig { params, tokenizer: Tokenizer::default(), index: IndexConfig::None }
    }

    /// With another tokenizer.
    pub fn with_tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// With other index settings.
    pub fn with_index(mut self, index: IndexConfig) -> Self {
        self.index = index;
        self
    }

    /// Checks parameters and tokenizer.
    pub fn validate(&self) -> Result<(), Error> {
        self.params.validate()?;
        self.tokenizer.validate()?;
        Ok(())
    }
}

/// The part of the configuration the storage layer keeps opaque (`CollectionDef::settings`).
#[derive(Serialize, Deserialize)]
struct Settings {
    tokenizer: Tokenizer,
    index: IndexConfig,
}

const SETTINGS: &str = "collection settings";

pub(crate) fn encode_settings(config: &CollectionConfig) -> Result<Vec<u8>, Error> {
    to_postcard(SETTINGS, &Settings { tokenizer: config.tokenizer, index: config.index }).map_err(|source| {
        Error::Storage(StorageError::CorruptMeta {
            table: "sketchdb.collections",
            key: "(new)".into(),
            source: Box::new(source),
        })
    })
}

pub(crate) fn decode_settings(id: u32, params: SketchParams, bytes: &[u8]) -> Result<CollectionConfig, Error> {
    let corrupt = |source| StorageError::CorruptMeta {
        table: "sketchdb.collections",
        key: id.to_string(),
        source: Box::new(source),
    };
    let s: Settings = from_postcard(SETTINGS, bytes).map_err(corrupt)?;
    s.tokenizer
        .validate()
        .map_err(|e| corrupt(crate::codec::error::CodecError::Sketch { what: SETTINGS, source: e }))?;
    Ok(CollectionConfig { params, tokenizer: s.tokenizer, index: s.index })
}
