//! Output formatting shared by every command.

/// A table for people: comfy-table with a header row.
pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_HORIZONTAL_ONLY);
    t.set_header(header.iter().copied());
    for r in rows {
        t.add_row(r);
    }
    t.to_string()
}

/// A CSV field, quoted when it holds a comma, a quote or a newline.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}
