//! Fuzz `inspect`: whatever the file (detected by content), its summary
//! serializes to JSON, has a one-line form (escaped for a terminal), and its
//! tensor table renders through the command line's table writer
//! without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_format::inspect::{Summary, TensorSummary};

// The command line's table writer and its escaping, compiled from their own
// source files (the CLI is a binary crate, so there is no library to depend
// on).
#[path = "../../crates/cli/src/printable.rs"]
#[allow(dead_code)]
mod printable;
#[path = "../../crates/cli/src/text_table.rs"]
mod text_table;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input");
    std::fs::write(&path, data).unwrap();
    let Ok(summary) = modelbin_format::open(&path).map(|file| Summary::of(&file)) else {
        return;
    };
    let _ = serde_json::to_string(&summary).unwrap();
    let _ = printable::printable(&summary.one_line());
    if let Summary::Tensors(s) = &summary {
        let rows: Vec<Vec<String>> = s.tensors.iter().map(TensorSummary::table_row).collect();
        let headings = TensorSummary::TABLE_HEADINGS;
        let mut out = Vec::new();
        text_table::write(&mut out, &headings, &rows, headings.len() - TensorSummary::NUMERIC_COLUMNS)
            .unwrap();
    }
});
