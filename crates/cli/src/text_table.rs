//! Aligned text tables, as `modelbin inspect` prints them: safe for any
//! cell content (control characters escaped) and any size (a cell longer
//! than [`MAX_COLUMN_WIDTH`] is printed whole without widening its column).

use std::io::{self, Write};

use crate::printable::{printed_width, write_printable};

/// Columns are padded to their longest cell up to this width; a longer cell
/// is printed whole without widening its column, so one huge name cannot
/// make every row of a large table that long.
pub const MAX_COLUMN_WIDTH: usize = 64;

/// Writes the table as lines indented by two spaces; columns from
/// `left_columns` on are right-aligned (numbers). Every row has one cell
/// per heading. Streams row by row: no copy of the table is made.
pub fn write(
    out: &mut impl Write,
    headings: &[&str],
    rows: &[Vec<String>],
    left_columns: usize,
) -> io::Result<()> {
    let widths: Vec<usize> = (0..headings.len())
        .map(|c| {
            rows.iter()
                .map(|r| printed_width(&r[c]))
                .chain([printed_width(headings[c])])
                .filter(|&w| w <= MAX_COLUMN_WIDTH)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |out: &mut dyn Write, cells: &mut dyn Iterator<Item = &str>| -> io::Result<()> {
        let mut pending_spaces = 2; // the indent; trailing padding is never written
        for (c, (cell, &w)) in cells.zip(&widths).enumerate() {
            let pad = w.saturating_sub(printed_width(cell));
            if c >= left_columns {
                pending_spaces += pad;
            }
            write!(out, "{:pending_spaces$}", "")?;
            write_printable(out, cell)?;
            pending_spaces = 2 + if c >= left_columns { 0 } else { pad };
        }
        writeln!(out)
    };
    line(out, &mut headings.iter().copied())?;
    for r in rows {
        line(out, &mut r.iter().map(String::as_str))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`write()`] into a string.
    fn render(headings: &[&str], rows: &[Vec<String>], left_columns: usize) -> String {
        let mut out = Vec::new();
        write(&mut out, headings, rows, left_columns).expect("writing to memory");
        String::from_utf8(out).expect("cells are UTF-8")
    }

    #[test]
    fn aligns_columns_and_escapes_control_characters() {
        let rows = vec![
            vec!["w".to_owned(), "8".to_owned()],
            vec!["a\x1b[31m".to_owned(), "1024".to_owned()],
        ];
        assert_eq!(
            render(&["NAME", "BYTES"], &rows, 1),
            "  NAME         BYTES\n  w                8\n  a\\u{1b}[31m   1024\n"
        );
    }

    #[test]
    fn a_huge_cell_does_not_widen_its_column() {
        let long = "n".repeat(70_000);
        let rows = vec![
            vec![long.clone(), "1".to_owned()],
            vec!["w".to_owned(), "2".to_owned()],
        ];
        let text = render(&["NAME", "N"], &rows, 1);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "  NAME  N");
        assert_eq!(lines[1], format!("  {long}  1"));
        assert_eq!(lines[2], "  w     2");
    }
}
