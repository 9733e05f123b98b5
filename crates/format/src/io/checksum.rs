//! Checksums and hashes used by the formats: CRC-32 (zlib), FNV-1a 32, SHA-256.

use std::sync::atomic::{AtomicBool, Ordering};

use sha2::{Digest, Sha256};

/// CRC-32 with the zlib polynomial (0xEDB88320, reflected), as EMBD uses.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// FNV-1a 32-bit hash (basis 0x811C9DC5, prime 0x01000193), as EMBD's name hashes use.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811C_9DC5, |hash: u32, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// SHA-256 digest of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// SHA-256 digest of `bytes`, or `None` once `stop` is set: the hash
/// looks at `stop` between chunks of 16 MiB, so a caller hashing a large
/// file beside other work can abandon it when that work fails.
pub fn sha256_unless(bytes: &[u8], stop: &AtomicBool) -> Option<[u8; 32]> {
    let mut hasher = Sha256::new();
    for chunk in bytes.chunks(16 << 20) {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        hasher.update(chunk);
    }
    Some(hasher.finalize().into())
}

/// SHA-256 digest of the concatenation of `parts`, or `None` once `stop`
/// is set (looked at between chunks of 16 MiB, as [`sha256_unless`]).
pub fn sha256_of_parts_unless<'a>(
    parts: impl IntoIterator<Item = &'a [u8]>,
    stop: &AtomicBool,
) -> Option<[u8; 32]> {
    let mut hasher = Sha256::new();
    for part in parts {
        for chunk in part.chunks(16 << 20) {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            hasher.update(chunk);
        }
    }
    Some(hasher.finalize().into())
}

/// Lowercase hexadecimal form of a byte string (for SHA-256 digests).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(fnv1a32(b""), 0x811C_9DC5);
        assert_eq!(fnv1a32(b"a"), 0xE40C_292C);
        assert_eq!(fnv1a32(b"foobar"), 0xBF9C_F968);
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_stoppable_hash_equals_the_hash_across_chunks_and_gives_up_when_stopped() {
        let bytes: Vec<u8> = (0..(40u32 << 20) / 7)
            .flat_map(|i| i.to_le_bytes())
            .collect();
        let running = AtomicBool::new(false);
        assert_eq!(sha256_unless(&bytes, &running), Some(sha256(&bytes)));
        assert_eq!(sha256_unless(b"", &running), Some(sha256(b"")));
        assert_eq!(sha256_unless(&bytes, &AtomicBool::new(true)), None);
    }
}
