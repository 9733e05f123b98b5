//! Python's `json.dumps`, byte for byte: the dataset hash is the SHA-256 of
//! `json.dumps(metadata, sort_keys=True)`, and `metadata.json` is written as
//! `json.dump(metadata, f, indent=4)` does.
//!
//! Rules reproduced: separators `", "` / `": "` (`","` between items when
//! indenting), keys sorted by code point, `ensure_ascii` (every char outside
//! space..`~` escaped as lowercase `\uXXXX`, surrogate pairs above the BMP,
//! with the short escapes `\" \\ \n \r \t \b \f`), floats as Python's `repr`
//! (shortest round-trip digits, exponent form when the decimal point falls
//! at or below -4 or above 16), NaN and infinities as `NaN`/`Infinity`.

use serde_json::Value;

/// How to lay out the output.
#[derive(Debug, Clone, Copy)]
pub enum Layout {
    /// `json.dumps(v, sort_keys=True)`: one line, keys sorted.
    SortedCompact,
    /// `json.dump(v, f, indent=4)`: keys in the given order.
    Indented4,
}

/// `value` serialized as Python's json module would.
pub fn dumps(value: &Value, layout: Layout) -> String {
    let mut out = String::new();
    write_value(&mut out, value, layout, 0);
    out
}

fn write_value(out: &mut String, value: &Value, layout: Layout, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&float_repr(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                separator(out, layout, depth + 1, i == 0);
                write_value(out, item, layout, depth + 1);
            }
            close(out, layout, depth);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if matches!(layout, Layout::SortedCompact) {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                separator(out, layout, depth + 1, i == 0);
                write_string(out, key);
                out.push_str(": ");
                write_value(out, item, layout, depth + 1);
            }
            close(out, layout, depth);
            out.push('}');
        }
    }
}

fn separator(out: &mut String, layout: Layout, depth: usize, first: bool) {
    match layout {
        Layout::SortedCompact if !first => out.push_str(", "),
        Layout::SortedCompact => {}
        Layout::Indented4 => {
            if !first {
                out.push(',');
            }
            out.push('\n');
            out.push_str(&" ".repeat(4 * depth));
        }
    }
}

fn close(out: &mut String, layout: Layout, depth: usize) {
    if let Layout::Indented4 = layout {
        out.push('\n');
        out.push_str(&" ".repeat(4 * depth));
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr(float)`.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Shortest round-trip digits and exponent, e.g. "1.5e-5".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exponent: i32 = exponent.parse().expect("integer exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f < 0.0 { "-" } else { "" };
    // Python's decpt: the value is 0.DIGITS × 10^decpt.
    let decpt = exponent + 1;
    if decpt > -4 && decpt <= 16 {
        let body = if decpt <= 0 {
            format!("0.{}{digits}", "0".repeat((-decpt) as usize))
        } else if decpt as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(decpt as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..decpt as usize],
                &digits[decpt as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let mantissa = if digits.len() == 1 {
            digits
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_python_repr() {
        for (value, python) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (123.456, "123.456"),
            (-0.0, "-0.0"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(float_repr(value), python, "{value}");
        }
    }

    #[test]
    fn strings_escape_like_ensure_ascii() {
        let v = Value::String("a\"\\\n\t\u{7f}é中😀\u{1}".into());
        assert_eq!(
            dumps(&v, Layout::SortedCompact),
            r#""a\"\\\n\t\u007f\u00e9\u4e2d\ud83d\ude00\u0001""#
        );
    }

    #[test]
    fn layouts() {
        let v: Value =
            serde_json::from_str(r#"{"b": [1, 2.0, {}], "a": {"y": [], "x": null}}"#).unwrap();
        assert_eq!(
            dumps(&v, Layout::SortedCompact),
            r#"{"a": {"x": null, "y": []}, "b": [1, 2.0, {}]}"#
        );
        let indented = dumps(&v, Layout::Indented4);
        assert!(
            indented.starts_with("{\n    \"b\": [\n        1,\n        2.0,\n        {}\n    ],"),
            "{indented}"
        );
        assert!(indented.ends_with("\n    }\n}"), "{indented}");
    }
}
