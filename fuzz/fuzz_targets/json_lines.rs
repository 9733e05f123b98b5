//! Fuzz the line readers: `read_line` under any cap and buffer size gives
//! the lines `read_until` gives, up to the first one longer than the cap
//! (its line break not counted), which is `TooLong`; every line read as a
//! JSON string gives what serde_json gives; ids written as a JSON line are
//! serde_json's compact array.
#![no_main]

use std::io::{BufRead, BufReader};

use libfuzzer_sys::fuzz_target;
use modelbin_format::io::lines::{Line, push_json_ids, push_json_string, read_line};

fuzz_target!(|data: &[u8]| {
    let [cap, capacity, input @ ..] = data else {
        return;
    };
    let max = usize::from(*cap);
    let mut reader = BufReader::with_capacity(usize::from(*capacity % 16) + 1, input);
    let mut expected = BufReader::new(input);
    loop {
        let mut want = Vec::new();
        expected.read_until(b'\n', &mut want).unwrap();
        let content = match want.strip_suffix(b"\n") {
            Some(line) => line.strip_suffix(b"\r").unwrap_or(line).len(),
            None => want.len(),
        };
        let mut line = b"kept".to_vec();
        let got = read_line(&mut reader, &mut line, max).unwrap();
        if want.is_empty() {
            assert_eq!(got, Line::End);
            break;
        }
        if content > max {
            assert_eq!(got, Line::TooLong);
            assert_eq!(line, b"kept");
            break;
        }
        assert_eq!(got, Line::Read(want.len()));
        assert_eq!(&line[4..], &want[..]);

        let mut text = String::from("kept");
        let fast = push_json_string(&want, &mut text);
        let parsed = serde_json::from_slice::<String>(&want);
        assert_eq!(fast.is_ok(), parsed.is_ok(), "{want:?}: {fast:?} {parsed:?}");
        if let Ok(parsed) = parsed {
            assert_eq!(text, format!("kept{parsed}"));
        }
    }

    let ids: Vec<u32> = input
        .chunks_exact(4)
        .map(|word| u32::from_le_bytes(word.try_into().unwrap()))
        .collect();
    let mut json = Vec::new();
    push_json_ids(&mut json, &ids);
    assert_eq!(json, format!("{}\n", serde_json::to_string(&ids).unwrap()).into_bytes());
});
