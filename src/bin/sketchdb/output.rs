//! Output shared by every command: lines on stdout (a closed pipe becomes
//! [`CliError::Closed`], never a panic), notes and summaries on stderr, JSON errors, and
//! tables that fit the terminal.
//!
//! Every command writes stdout through [`outln!`] (or [`write_out`]), so `sketchdb ... | head`
//! stops at the first line the reader no longer takes and exits 0 without a word.

use std::cell::Cell;
use std::io::{IsTerminal, Write};

use serde_json::{Value, json};

use crate::error::CliError;

/// Members of a list shown in a table before "... and N more" (all with `--wide`).
pub const LIST_LIMIT: usize = 8;

thread_local! {
    static JSON: Cell<bool> = const { Cell::new(false) };
    static WIDE: Cell<bool> = const { Cell::new(false) };
}

/// Sets the output mode of the command about to run (`--json`, `--wide`).
pub fn set_mode(json: bool, wide: bool) {
    JSON.with(|c| c.set(json));
    WIDE.with(|c| c.set(wide));
}

/// Whether the running command was given `--json`.
pub fn json_mode() -> bool {
    JSON.with(Cell::get)
}

/// Whether the running command was given `--wide`.
pub fn wide() -> bool {
    WIDE.with(Cell::get)
}

/// A write error on stdout: [`CliError::Closed`] for a closed pipe.
pub fn stdout_error(e: std::io::Error) -> CliError {
    if e.kind() == std::io::ErrorKind::BrokenPipe { CliError::Closed } else { CliError::Io(format!("stdout: {e}")) }
}

/// Writes formatted text to stdout.
pub fn write_out(args: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    std::io::stdout().lock().write_fmt(args).map_err(stdout_error)
}

/// Flushes stdout (at the end of a command).
pub fn flush_out() -> Result<(), CliError> {
    std::io::stdout().lock().flush().map_err(stdout_error)
}

/// `println!` for command output: returns `Result<(), CliError>`, `Closed` on a closed pipe.
macro_rules! outln {
    () => { $crate::output::write_out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::write_out(format_args!("{}\n", format_args!($($arg)*))) };
}
pub(crate) use outln;

/// A line on stderr for people; a failed write to stderr is ignored (there is nowhere left
/// to report it).
pub fn note(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The one summary line of a command that changed something, on stderr: `human` as text, or
/// `fields` as one JSON object (with `"command"` added) under `--json`.
pub fn summary(command: &str, human: &str, mut fields: Value) {
    if json_mode() {
        if let Some(o) = fields.as_object_mut() {
            o.insert("command".into(), json!(command));
        }
        note(&fields.to_string());
    } else {
        note(human);
    }
}

/// Reports a failure on stderr: `sketchdb: error: ...`, or under `--json` one line
/// `{"error": {"code", "kind", "message"}}`.
pub fn report_error(e: &CliError, json: bool) {
    let kind = e.kind();
    if json {
        note(&json!({"error": {"code": kind.code(), "kind": kind.name(), "message": e.to_string()}}).to_string());
    } else {
        note(&format!("sketchdb: error: {e}"));
    }
}

/// The width a table must fit: `$COLUMNS` when set, else the terminal's when stdout is one,
/// else none (pipes and files get whole lines).
fn width() -> Option<u16> {
    if let Some(c) = std::env::var("COLUMNS").ok().and_then(|c| c.parse::<u16>().ok()) {
        return Some(c);
    }
    if std::io::stdout().is_terminal() { terminal_size() } else { None }
}

fn terminal_size() -> Option<u16> {
    let t = comfy_table::Table::new();
    t.width()
}

/// A table for people: comfy-table with a header row, wrapped to the terminal's width
/// unless `--wide`.
pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_HORIZONTAL_ONLY);
    match width() {
        Some(w) if !wide() => {
            t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
            t.set_width(w);
        }
        _ => {
            t.set_content_arrangement(comfy_table::ContentArrangement::Disabled);
        }
    }
    t.set_header(header.iter().copied());
    for r in rows {
        t.add_row(r);
    }
    t.to_string()
}

/// A list for a table cell: the first [`LIST_LIMIT`] items and "... and N more" (every item
/// with `--wide`).
pub fn short_list(items: &[String]) -> String {
    if wide() || items.len() <= LIST_LIMIT {
        return items.join(", ");
    }
    format!("{}, ... and {} more", items[..LIST_LIMIT].join(", "), items.len() - LIST_LIMIT)
}
