//! Aligned text tables, as `modelbin inspect` prints them: safe for any
//! cell content (control characters escaped) and any size (a cell longer
//! than [`MAX_COLUMN_WIDTH`] is printed whole without widening its column).

/// Columns are padded to their longest cell up to this width; a longer cell
/// is printed whole without widening its column, so one huge name cannot
/// make every row of a large table that long.
pub const MAX_COLUMN_WIDTH: usize = 64;

/// A cell as printed: control characters (a name may hold any UTF-8)
/// escaped, so that no cell can move the cursor or recolour the terminal.
fn printable(cell: &str) -> String {
    if !cell.chars().any(char::is_control) {
        return cell.to_owned();
    }
    cell.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// The table as lines indented by two spaces; columns from `left_columns`
/// on are right-aligned (numbers). Every row has one cell per heading.
pub fn render(headings: &[&str], rows: &[Vec<String>], left_columns: usize) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| printable(c)).collect())
        .collect();
    let widths: Vec<usize> = (0..headings.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([headings[c].chars().count()])
                .filter(|&w| w <= MAX_COLUMN_WIDTH)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let text: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &w))| {
                let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
                if c >= left_columns {
                    format!("{pad}{cell}")
                } else {
                    format!("{cell}{pad}")
                }
            })
            .collect();
        out.push_str("  ");
        out.push_str(text.join("  ").trim_end());
        out.push('\n');
    };
    line(headings);
    for r in &rows {
        line(&r.iter().map(String::as_str).collect::<Vec<_>>());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
