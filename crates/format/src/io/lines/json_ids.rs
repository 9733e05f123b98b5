//! Token ids written as a line holding a JSON array, in serde_json's
//! compact form.
//!
//! Writing ids is a large part of `tokens encode --jsonl`'s work, so the
//! digits do not go through a formatter: each id's digits come from a table
//! of the 10,000 four-digit groups (two lookups per id below 10^8), are put
//! together in a register with no branch on the id's width, and are stored
//! at once into a stack buffer that is copied out when nearly full.
//! docs/benchmarks.md has the command's throughput.

/// Appends `ids` as a JSON array (serde_json's compact form) and a line
/// break. Digits are formed in a stack buffer copied out when nearly full.
pub fn push_json_ids(json: &mut Vec<u8>, ids: &[u32]) {
    let mut buffer = [0u8; 256];
    buffer[0] = b'[';
    let mut len = 1;
    for (index, &id) in ids.iter().enumerate() {
        // Room for a comma and a number.
        if len > buffer.len() - 1 - DECIMAL_ROOM {
            json.extend_from_slice(&buffer[..len]);
            len = 0;
        }
        if index > 0 {
            buffer[len] = b',';
            len += 1;
        }
        len += write_decimal(&mut buffer[len..], id);
    }
    json.extend_from_slice(&buffer[..len]);
    json.extend_from_slice(b"]\n");
}

/// The four ASCII digits of every number below 10,000 (zero-padded), the
/// most significant in the lowest byte: 40 KB, built at compile time.
static FOUR_DIGITS: [u32; 10_000] = {
    let mut table = [0u32; 10_000];
    let mut value: u32 = 0;
    while value < 10_000 {
        let digits = [value / 1000, value / 100 % 10, value / 10 % 10, value % 10];
        table[value as usize] = u32::from_le_bytes([
            b'0' + digits[0] as u8,
            b'0' + digits[1] as u8,
            b'0' + digits[2] as u8,
            b'0' + digits[3] as u8,
        ]);
        value += 1;
    }
    table
};

/// The smallest number of each decimal width from two digits up, with 0
/// first: `value < POWERS_OF_TEN[k]` tells whether a number whose bit length
/// suggests `k + 1` digits has only `k`.
const POWERS_OF_TEN: [u32; 10] = [
    0,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// The bytes [`write_decimal`] may write.
const DECIMAL_ROOM: usize = 10;

/// Writes the decimal digits of `value` at the start of `out` (at least
/// [`DECIMAL_ROOM`] bytes long; the bytes after the digits may be
/// overwritten) and returns how many there are.
fn write_decimal(out: &mut [u8], value: u32) -> usize {
    const EIGHT_DIGITS: u32 = 100_000_000;
    if value < EIGHT_DIGITS {
        return write_short_decimal(out, value);
    }
    let lead = write_short_decimal(out, value / EIGHT_DIGITS);
    out[lead..lead + 8].copy_from_slice(&eight_digits(value % EIGHT_DIGITS).to_le_bytes());
    lead + 8
}

/// [`write_decimal`] for values below 10^8. The digits are put together in
/// a register and stored at once, and no branch depends on the value, so
/// ids of mixed widths cost neither mispredictions nor stalled reloads.
fn write_short_decimal(out: &mut [u8], value: u32) -> usize {
    let bits = u32::BITS - (value | 1).leading_zeros();
    let guess = ((bits * 1233) >> 12) as usize;
    let width = guess + 1 - usize::from(value < POWERS_OF_TEN[guess]);
    let significant = eight_digits(value) >> (8 * (8 - width));
    out[..8].copy_from_slice(&significant.to_le_bytes());
    width
}

/// The eight decimal digits of `value` (below 10^8, zero-padded) as ASCII,
/// the most significant in the lowest byte.
fn eight_digits(value: u32) -> u64 {
    let (high, low) = (value / 10_000, value % 10_000);
    u64::from(FOUR_DIGITS[high as usize]) | u64::from(FOUR_DIGITS[low as usize]) << 32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_match_to_string() {
        let mut values: Vec<u32> = (0..=10)
            .flat_map(|k| {
                let power = 10u64.pow(k);
                [power - 1, power, power + 1]
            })
            .filter_map(|v| u32::try_from(v).ok())
            .chain([u32::MAX, u32::MAX - 1, 1 << 31])
            .collect();
        // A spread of values of every width (a fixed multiplicative walk).
        let mut v: u32 = 1;
        for _ in 0..100_000 {
            v = v.wrapping_mul(2_654_435_761).wrapping_add(12_345);
            values.push(v >> (v % 32));
        }
        let mut out = [0u8; DECIMAL_ROOM];
        for value in values {
            let width = write_decimal(&mut out, value);
            assert_eq!(&out[..width], value.to_string().as_bytes(), "{value}");
        }
    }

    #[test]
    fn json_lines_match_serde_json() {
        for ids in [vec![], vec![0], vec![7, 100_256, 4_294_967_295, 10, 99]] {
            let mut json = Vec::new();
            push_json_ids(&mut json, &ids);
            let want = serde_json::to_string(&ids).unwrap() + "\n";
            assert_eq!(String::from_utf8(json).unwrap(), want);
        }
        // Long enough to refill the stack buffer many times.
        let ids: Vec<u32> = (0..5_000).map(|i| i * 997).collect();
        let mut json = Vec::new();
        push_json_ids(&mut json, &ids);
        assert_eq!(
            json,
            (serde_json::to_string(&ids).unwrap() + "\n").into_bytes()
        );
    }
}
