//! Recognising a file's format from its content.
//!
//! Magic bytes first (EMBD, BPE2, TLLM), then structural probes for the two
//! formats without magic (safetensors: a JSON object behind the size prefix;
//! BinTensors: an aligned size prefix followed by an option tag), and a SAEV
//! dataset is a directory holding `metadata.json` and `acts*.bin` shards.
//! Only when the content is inconclusive does the extension decide, so that
//! a damaged `.bt` file still reaches the BinTensors validator and its error.

use std::fmt;
use std::path::Path;

use crate::io::source::MappedFile;
use crate::{Error, Result};

/// The file formats modelbin knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// BinTensors (`.bt`).
    BinTensors,
    /// safetensors (`.safetensors`).
    Safetensors,
    /// EMBD sentence-embedding weights (`.embd`).
    Embd,
    /// BPE2 tiktoken vocabulary (`.bpe2`).
    Bpe2,
    /// TLLM tiny transformer weights (`.tllm`).
    Tllm,
    /// SAEV activation dataset (a directory).
    Saev,
    /// tiktoken vocabulary text (`.tiktoken`): `base64-token rank` per line.
    Tiktoken,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 7] = [
        Format::BinTensors,
        Format::Safetensors,
        Format::Embd,
        Format::Bpe2,
        Format::Tllm,
        Format::Saev,
        Format::Tiktoken,
    ];

    /// The short name used on the command line and in JSON output.
    pub const fn name(self) -> &'static str {
        match self {
            Format::BinTensors => "bintensors",
            Format::Safetensors => "safetensors",
            Format::Embd => "embd",
            Format::Bpe2 => "bpe2",
            Format::Tllm => "tllm",
            Format::Saev => "saev",
            Format::Tiktoken => "tiktoken",
        }
    }

    /// File extensions (without the dot) that name this format.
    pub const fn extensions(self) -> &'static [&'static str] {
        match self {
            Format::BinTensors => &["bt", "bintensors"],
            Format::Safetensors => &["safetensors"],
            Format::Embd => &["embd", "weights"],
            Format::Bpe2 => &["bpe2"],
            Format::Tllm => &["tllm"],
            Format::Saev => &[],
            Format::Tiktoken => &["tiktoken"],
        }
    }

    /// Parses a name as given to `--to` or `--format` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Format> {
        let name = name.to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.name() == name || f.extensions().contains(&name.as_str()))
    }

    /// The format a path's extension names, if any.
    pub fn from_extension(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.extensions().contains(&ext.as_str()))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Recognises a format from the first bytes of a file (all of it, for the
/// structural probes). `None` when the content is inconclusive.
pub fn detect_bytes(bytes: &[u8]) -> Option<Format> {
    const MAGICS: [(&[u8], Format); 3] = [
        (b"EMBD", Format::Embd),
        (b"BPE2", Format::Bpe2),
        // TLLM's magic is the u32 0x544C4C4D written little-endian.
        (b"MLLT", Format::Tllm),
    ];
    if let Some((_, format)) = MAGICS.iter().find(|(magic, _)| bytes.starts_with(magic)) {
        return Some(*format);
    }
    if looks_like_tiktoken(bytes) {
        return Some(Format::Tiktoken);
    }
    let prefix: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
    let header_len = u64::from_le_bytes(prefix);
    let fits = header_len <= bytes.len() as u64 - 8;
    match bytes.get(8) {
        Some(b'{') if fits => Some(Format::Safetensors),
        Some(0 | 1) if fits && header_len.is_multiple_of(8) => Some(Format::BinTensors),
        _ => None,
    }
}

/// A first line of the form `base64 digits\n`.
fn looks_like_tiktoken(bytes: &[u8]) -> bool {
    let line = match bytes.iter().position(|&b| b == b'\n') {
        Some(end) => &bytes[..end],
        None => return false,
    };
    let Some(space) = line.iter().position(|&b| b == b' ') else {
        return false;
    };
    let (token, rank) = (&line[..space], &line[space + 1..]);
    !token.is_empty()
        && token
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        && !rank.is_empty()
        && rank.iter().all(u8::is_ascii_digit)
}

/// Recognises the format of the file or directory at `path`.
pub fn detect(path: &Path) -> Result<Format> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_dir() {
        // A SAEV root with datasets under it is one for `saev::open`, which
        // opens a lone dataset and names several.
        return if is_saev_dir(path) || !crate::saev::datasets_in(path).is_empty() {
            Ok(Format::Saev)
        } else {
            Err(Error::UnknownFormat {
                path: path.to_path_buf(),
            })
        };
    }
    let file = MappedFile::open(path)?;
    detect_bytes(&file)
        .or_else(|| Format::from_extension(path))
        .ok_or_else(|| Error::UnknownFormat {
            path: path.to_path_buf(),
        })
}

fn is_saev_dir(path: &Path) -> bool {
    let has_shard = std::fs::read_dir(path).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("acts") && name.ends_with(".bin")
        })
    });
    has_shard && path.join("metadata.json").is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes() {
        assert_eq!(detect_bytes(b"EMBD\x01\x00"), Some(Format::Embd));
        assert_eq!(detect_bytes(b"BPE2\x02\x00"), Some(Format::Bpe2));
        assert_eq!(
            detect_bytes(&[0x4D, 0x4C, 0x4C, 0x54, 1, 0, 0, 0]),
            Some(Format::Tllm)
        );
        assert_eq!(
            detect_bytes(b"TLLM"),
            None,
            "big-endian TLLM magic is not TLLM"
        );
    }

    #[test]
    fn structural_probes() {
        let mut st = 2u64.to_le_bytes().to_vec();
        st.extend_from_slice(b"{}");
        assert_eq!(detect_bytes(&st), Some(Format::Safetensors));
        let bt = [8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 32, 32, 32, 32, 32];
        assert_eq!(detect_bytes(&bt), Some(Format::BinTensors));
        assert_eq!(detect_bytes(&bt[..12]), None, "header past the end");
        assert_eq!(detect_bytes(b"hello world, plain text"), None);
        assert_eq!(detect_bytes(b""), None);
    }

    #[test]
    fn names_and_extensions() {
        assert_eq!(Format::from_name("BT"), Some(Format::BinTensors));
        assert_eq!(Format::from_name("safetensors"), Some(Format::Safetensors));
        assert_eq!(Format::from_name("onnx"), None);
        assert_eq!(
            Format::from_extension(Path::new("a/model.SafeTensors")),
            Some(Format::Safetensors)
        );
        assert_eq!(Format::from_extension(Path::new("model")), None);
    }

    #[test]
    fn saev_directories() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            detect(dir.path()),
            Err(Error::UnknownFormat { .. })
        ));
        std::fs::write(dir.path().join("metadata.json"), "{}").unwrap();
        std::fs::write(dir.path().join("acts000000.bin"), []).unwrap();
        assert_eq!(detect(dir.path()).unwrap(), Format::Saev);
    }

    #[test]
    fn extension_decides_only_when_content_is_inconclusive() {
        let dir = tempfile::tempdir().unwrap();
        let damaged = dir.path().join("damaged.bt");
        std::fs::write(&damaged, [0xFF; 4]).unwrap();
        assert_eq!(detect(&damaged).unwrap(), Format::BinTensors);
        let lying = dir.path().join("vocab.bt");
        std::fs::write(&lying, b"BPE2....").unwrap();
        assert_eq!(detect(&lying).unwrap(), Format::Bpe2);
        let unknown = dir.path().join("notes.txt");
        std::fs::write(&unknown, b"hello").unwrap();
        assert!(matches!(detect(&unknown), Err(Error::UnknownFormat { .. })));
    }
}
