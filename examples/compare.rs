//! Sketches the bundled sample documents and prints, for every pair that shares any
//! 5-word shingle, the estimated Jaccard with its 95% interval next to the exact value.
//!
//! Run: `cargo run --release --example compare [DIR]` (default `samples/docs`).

use std::path::PathBuf;

use sketchdb::{SketchParams, Sketcher, TokenSet, Tokenizer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "samples/docs".into()));
    let mut docs: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "txt") {
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            docs.push((name, std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?));
        }
    }
    docs.sort();
    let tokenizer = Tokenizer::default();
    let sets: Vec<TokenSet> = docs.iter().map(|(_, text)| tokenizer.token_set(text)).collect();
    let kinds = [
        ("minhash k=128", SketchParams::minhash(128, 32, 42)?),
        ("b-bit b=8 k=512", SketchParams::bbit(512, 8, 42)?),
        ("oph t=128", SketchParams::oph(128, 32, 42)?),
    ];
    let sketches = kinds
        .iter()
        .map(|(_, p)| {
            let sk = Sketcher::new(*p)?;
            sets.iter().map(|s| sk.sketch(s)).collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;

    println!("{} documents from {}, 5-word shingles, 95% intervals\n", docs.len(), dir.display());
    print!("{:<42} {:>6}", "pair", "exact");
    for (name, _) in &kinds {
        print!("  {name:>24}");
    }
    println!();
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            let exact = sets[i].jaccard(&sets[j]);
            if exact == 0.0 {
                continue;
            }
            print!("{:<42} {exact:>6.3}", format!("{} ~ {}", docs[i].0, docs[j].0));
            for per_kind in &sketches {
                let e = per_kind[i].similarity(&per_kind[j], 0.95)?;
                print!("  {:>24}", format!("{:.3} [{:.3}, {:.3}]", e.value, e.lower, e.upper));
            }
            println!();
        }
    }
    Ok(())
}
