//! Fuzz `inspect`: whatever the file (detected by content), its summary
//! serializes to JSON, has a one-line form, and its tensor table renders
//! as text, without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_format::inspect::{Summary, TensorSummary};
use modelbin_format::text_table;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input");
    std::fs::write(&path, data).unwrap();
    let Ok(summary) = modelbin_format::open(&path).map(|file| file.summary()) else {
        return;
    };
    let _ = serde_json::to_string(&summary).unwrap();
    let _ = summary.one_line();
    if let Summary::Tensors(s) = &summary {
        let rows: Vec<Vec<String>> = s.tensors.iter().map(TensorSummary::table_row).collect();
        let headings = TensorSummary::TABLE_HEADINGS;
        let _ = text_table::render(&headings, &rows, headings.len() - TensorSummary::NUMERIC_COLUMNS);
    }
});
