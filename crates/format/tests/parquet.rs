//! Texts from Parquet files that pyarrow wrote (tests/data/parquet/make.py):
//! every row of the column, in order, and every file that gives no texts
//! refused on its variant.

use std::path::{Path, PathBuf};

use modelbin_format::Error;
use modelbin_format::io::texts::parquet::ParquetError;
use modelbin_format::io::texts::{TextFormat, TextKind, Texts};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/parquet")
        .join(name)
}

fn texts_of(name: &str, field: Option<&str>) -> Result<Vec<String>, Error> {
    let path = fixture(name);
    let bytes = std::fs::read(&path).unwrap();
    let format = TextFormat {
        jsonl: false,
        field: field.map(str::to_owned),
    };
    match format.texts(&path, &bytes)? {
        Texts::Records(texts) => Ok(texts),
        Texts::Plain(_) => panic!("{name} read as plain text"),
    }
}

fn parquet_error(name: &str, field: Option<&str>) -> ParquetError {
    match texts_of(name, field) {
        Err(Error::Parquet(error)) => error,
        other => panic!("{name}: {other:?}"),
    }
}

const TEXTS: [&str; 8] = [
    "plain words",
    "",
    "caf\u{e9} \u{4e2d}\u{6587} \u{1f600}",
    "two\nlines\r\n",
    "  runs   of   space  ",
    "<|endoftext|> inside",
    "tab\there",
    "last",
];

#[test]
fn every_row_of_the_column_is_a_text_in_order() {
    // Three row groups with dictionary pages, snappy-compressed.
    assert_eq!(texts_of("texts.parquet", None).unwrap(), TEXTS);
    let upper: Vec<String> = TEXTS.iter().map(|t| t.to_uppercase()).collect();
    assert_eq!(texts_of("texts.parquet", Some("body")).unwrap(), upper);
}

#[test]
fn a_parquet_file_is_parquet_by_its_name_even_when_json_lines_are_asked_for() {
    let jsonl = TextFormat {
        jsonl: true,
        field: None,
    };
    assert_eq!(jsonl.kind(Path::new("a.PARQUET")), TextKind::Parquet);
    assert_eq!(jsonl.kind(Path::new("a.txt")), TextKind::JsonLines);
    assert_eq!(
        TextFormat::default().kind(Path::new("a.txt")),
        TextKind::Plain
    );
}

#[test]
fn a_missing_column_names_the_columns_there_are() {
    match parquet_error("texts.parquet", Some("content")) {
        ParquetError::NoColumn {
            column, columns, ..
        } => {
            assert_eq!(column, "content");
            assert_eq!(columns, "id, text, body");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_column_of_anything_but_strings_is_refused() {
    for name in ["binary.parquet", "list.parquet", "integer.parquet"] {
        assert!(
            matches!(parquet_error(name, None), ParquetError::NotText { .. }),
            "{name}"
        );
    }
    assert!(matches!(
        parquet_error("texts.parquet", Some("id")),
        ParquetError::NotText { .. }
    ));
}

#[test]
fn a_null_or_a_string_that_is_not_utf8_is_named_by_its_row() {
    assert!(matches!(
        parquet_error("null.parquet", None),
        ParquetError::Null { row: 4, .. }
    ));
    assert!(matches!(
        parquet_error("not_utf8.parquet", None),
        ParquetError::NotUtf8 { row: 1, .. }
    ));
}

#[test]
fn a_cut_or_garbled_file_is_malformed_at_every_length() {
    let path = fixture("texts.parquet");
    let bytes = std::fs::read(&path).unwrap();
    let format = TextFormat::default();
    for length in 0..bytes.len() {
        match format.texts(&path, &bytes[..length]) {
            Err(Error::Parquet(ParquetError::Malformed { .. })) => {}
            other => panic!("cut at {length}: {other:?}"),
        }
    }
    // Every byte of the footer's metadata flipped in turn: refused or read,
    // never a panic.
    for at in 0..bytes.len() {
        let mut garbled = bytes.clone();
        garbled[at] ^= 0x5a;
        match format.texts(&path, &garbled) {
            Ok(_) | Err(Error::Parquet(_)) => {}
            Err(other) => panic!("flipped at {at}: {other:?}"),
        }
    }
}

#[test]
fn pages_declaring_more_than_they_hold_are_refused() {
    // Each page claims 128 MiB - 1 decompressed bytes and holds 1.5 MB:
    // with memory to spare the decoder finds the mismatch.
    assert!(matches!(
        parquet_error("page_lie.parquet", None),
        ParquetError::Malformed { .. }
    ));
}
