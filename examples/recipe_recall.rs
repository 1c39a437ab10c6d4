//! Pair recall and precision of threshold search on the documents workload
//! (`gen_workloads.py docs`), with a collection's text cut by one recipe or another: the truth
//! file's line 1 states the recipe its Jaccard values follow (NFC, lower case, white-space
//! words with ASCII punctuation stripped, 5-word shingles), which the `words-5` preset is.
//!
//! Run: `cargo run --release --example recipe_recall -- DATA/docs-20k.jsonl DATA/docs-20k.truth.jsonl [K]`
//! Prints one line per recipe and threshold: recall, precision, found and true pairs.

use std::collections::HashSet;

use serde_json::Value;
use sketchdb::{Batch, CollectionConfig, Database, IndexConfig, Query, Recipe, SketchParams};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (docs_path, truth_path) = (args.get(1).ok_or("docs path")?, args.get(2).ok_or("truth path")?);
    let k: u32 = args.get(3).map_or(Ok(128), |s| s.parse())?;
    let mut docs = Vec::new();
    for line in std::fs::read_to_string(docs_path)?.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if let (Some(id), Some(text)) = (v["id"].as_str(), v["text"].as_str()) {
            docs.push((id.to_owned(), text.to_owned()));
        }
    }
    let mut truth: Vec<(String, String, f64)> = Vec::new();
    for line in std::fs::read_to_string(truth_path)?.lines().skip(1) {
        let v: Value = serde_json::from_str(line)?;
        if let (Some(a), Some(b), Some(j)) = (v["a"].as_str(), v["b"].as_str(), v["jaccard"].as_f64()) {
            truth.push((a.to_owned(), b.to_owned(), j));
        }
    }
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path().join("r.sketchdb"))?;
    for name in ["sketchdb", "words-5"] {
        for t in [0.5, 0.7, 0.8, 0.9] {
            let recipe = Recipe::preset(name)?;
            let config = CollectionConfig::new(SketchParams::minhash(k, 32, 42)?)
                .with_recipe(recipe)
                .with_index(IndexConfig::lsh(t));
            let c = db.create_collection(&format!("{name}-{t}"), config)?;
            let mut batch = Batch::new();
            let mut sketches = Vec::new();
            for (id, text) in &docs {
                if let Ok(s) = c.sketcher().sketch_text(&recipe.tokenizer(), text) {
                    batch.insert(id, s.clone());
                    sketches.push((id, s));
                }
            }
            c.apply(&batch)?;
            let mut found: HashSet<(String, String)> = HashSet::new();
            for (id, s) in &sketches {
                for hit in c.query(&Query::threshold(s.clone(), t))?.hits {
                    let other = String::from_utf8_lossy(&hit.key).into_owned();
                    if &other != *id {
                        let pair = if **id < other { ((*id).clone(), other) } else { (other, (*id).clone()) };
                        found.insert(pair);
                    }
                }
            }
            let want: HashSet<(String, String)> =
                truth.iter().filter(|(_, _, j)| *j >= t).map(|(a, b, _)| (a.clone(), b.clone())).collect();
            let hit = found.intersection(&want).count() as f64;
            println!(
                "{{\"recipe\":\"{name}\",\"k\":{k},\"t\":{t},\"recall\":{:.4},\"precision\":{:.4},\"found\":{},\"truth\":{}}}",
                hit / want.len().max(1) as f64,
                hit / found.len().max(1) as f64,
                found.len(),
                want.len()
            );
        }
    }
    Ok(())
}
