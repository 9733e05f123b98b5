//! Bounds on JSON documents parsed into trees: a parsed value costs tens of
//! bytes of memory however short its text (`0,` is two bytes), so documents
//! are refused when they hold more values than a documented cap, counted in
//! one pass over the text before anything is built.

use crate::{Error, Result};

/// An upper bound on the number of values in the JSON text `json`: one for
/// the root, plus one per `[`, `,` and `:` outside strings (every other
/// value starts right after one of them).
pub(crate) fn value_bound(json: &[u8]) -> u64 {
    let (mut count, mut in_string, mut escaped) = (1u64, false, false);
    for &byte in json {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'[' | b',' | b':' => count += 1,
                _ => {}
            }
        }
    }
    count
}

/// Refuses `json` when it may hold more than `limit` values.
pub(crate) fn check(json: &[u8], what: &'static str, limit: u64) -> Result<()> {
    let values = value_bound(json);
    if values > limit {
        return Err(Error::TooManyJsonValues {
            what,
            values,
            limit,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_the_values_of_a_document() {
        let json = br#"{"a": [1, 2, {"b": "x,y:[z\"]"}], "c": null}"#;
        // Values: root, the array, 1, 2, the inner object, "x..", null = 7.
        let bound = value_bound(json);
        assert!(bound >= 7, "{bound}");
        assert!(bound <= 8, "{bound}");
        assert_eq!(value_bound(b"0"), 1);
        check(json, "a document", 8).unwrap();
        assert!(matches!(
            check(b"[0,0,0,0]", "a document", 4),
            Err(Error::TooManyJsonValues {
                values: 5,
                limit: 4,
                ..
            })
        ));
    }
}
