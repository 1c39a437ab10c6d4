//! The truth file of a documents workload (`docs-<n>.truth.jsonl` of ../shared/bench, read as
//! it is): every pair inside each planted family with its exact Jaccard under the truth's
//! recipe, keyed by document number.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::CliError;

/// The exact pairs of a `docs-<n>.truth.jsonl` file, by document number (`d000123` is 123).
pub struct Truth {
    /// Every listed pair (a < b) with its Jaccard under the truth's own recipe.
    pairs: HashMap<(u32, u32), f64>,
    /// The dataset name the file states (`docs-20k`).
    pub dataset: String,
}

impl Truth {
    /// Reads a truth file: the recipe line, then pair lines and bad-record lines.
    pub fn load(path: &Path) -> Result<Truth, CliError> {
        let file = std::fs::File::open(path).map_err(|e| CliError::io(path, e))?;
        let (mut pairs, mut dataset) = (HashMap::new(), String::new());
        for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| CliError::io(path, e))?;
            let bad = |what: &str| CliError::Input(format!("{}:{}: {what}", path.display(), i + 1));
            let v: Value = serde_json::from_str(&line).map_err(|e| bad(&e.to_string()))?;
            if let Some(name) = v.get("dataset").and_then(Value::as_str) {
                dataset = name.to_string();
            } else if let (Some(a), Some(b), Some(j)) = (v.get("a"), v.get("b"), v.get("jaccard")) {
                let num = |x: &Value| x.as_str().and_then(|s| doc_number(s.as_bytes()));
                let (Some(a), Some(b), Some(j)) = (num(a), num(b), j.as_f64()) else {
                    return Err(bad("a pair line needs string ids `d<number>` and a numeric jaccard"));
                };
                pairs.insert((a.min(b), a.max(b)), j);
            } else if v.get("bad").is_none() {
                return Err(bad("neither the recipe, a pair nor a bad record"));
            }
        }
        if pairs.is_empty() {
            return Err(CliError::Input(format!("no pairs in {}", path.display())));
        }
        Ok(Truth { pairs, dataset })
    }

    /// Keeps only the pairs of documents numbered below `n` (the lines a limited run read).
    pub fn restrict(&mut self, n: u64) {
        self.pairs.retain(|&(a, b), _| u64::from(a.max(b)) < n);
    }

    /// Pairs whose true Jaccard reaches `t`.
    pub fn count_at(&self, t: f64) -> usize {
        self.pairs.values().filter(|&&j| j >= t).count()
    }

    /// Whether documents `a` and `b` are a true pair at `t`.
    pub fn holds(&self, a: u32, b: u32, t: f64) -> bool {
        self.pairs.get(&(a.min(b), a.max(b))).is_some_and(|&j| j >= t)
    }

    /// A truth from its pairs (a < b), for tests.
    #[cfg(test)]
    pub fn from_pairs(pairs: HashMap<(u32, u32), f64>, dataset: &str) -> Truth {
        Truth { pairs, dataset: dataset.to_string() }
    }

    /// Every listed pair, whatever its Jaccard.
    pub fn pair_ids(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.pairs.keys().copied()
    }

    /// Each document's partners with true Jaccard >= `t`.
    pub fn partners_at(&self, t: f64) -> HashMap<u32, HashSet<u32>> {
        let mut out: HashMap<u32, HashSet<u32>> = HashMap::new();
        for (&(a, b), _) in self.pairs.iter().filter(|(_, j)| **j >= t) {
            out.entry(a).or_default().insert(b);
            out.entry(b).or_default().insert(a);
        }
        out
    }

    /// Every document in some listed pair, ascending.
    pub fn members(&self) -> Vec<u32> {
        let mut m: Vec<u32> = self.pairs.keys().flat_map(|&(a, b)| [a, b]).collect();
        m.sort_unstable();
        m.dedup();
        m
    }
}

/// `d000123` -> 123.
pub fn doc_number(key: &[u8]) -> Option<u32> {
    std::str::from_utf8(key.strip_prefix(b"d")?).ok()?.parse().ok()
}

/// The truth file beside a docs file: `docs-20k.jsonl[.gz]` or `.parquet` ->
/// `docs-20k.truth.jsonl`.
pub fn truth_beside(docs: &Path) -> PathBuf {
    let name = docs.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.split('.').next().unwrap_or("docs");
    docs.with_file_name(format!("{stem}.truth.jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truth_files_give_pairs_by_document_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs-3.truth.jsonl");
        let lines = [
            r#"{"recipe": {}, "dataset": "docs-3", "n": 3}"#,
            r#"{"a": "d000002", "b": "d000000", "jaccard": 0.81}"#,
            r#"{"a": "d000000", "b": "d000001", "jaccard": 0.5}"#,
            r#"{"bad": 4, "why": "empty_text", "id": "d000003"}"#,
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let t = Truth::load(&path).unwrap();
        assert_eq!(t.dataset, "docs-3");
        assert!(t.holds(0, 2, 0.8) && t.holds(2, 0, 0.8) && !t.holds(0, 1, 0.8) && t.holds(1, 0, 0.5));
        assert_eq!((t.count_at(0.5), t.count_at(0.8), t.count_at(0.9)), (2, 1, 0));
        assert_eq!(t.members(), vec![0, 1, 2]);
        assert_eq!(truth_beside(Path::new("/x/docs-20k.jsonl.gz")), Path::new("/x/docs-20k.truth.jsonl"));
        std::fs::write(&path, "{\"a\": 1}\n").unwrap();
        assert!(Truth::load(&path).is_err());
    }
}
