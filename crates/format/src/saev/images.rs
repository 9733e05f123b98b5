//! The images a recording was made from, kept beside the shards of an
//! image-recorded dataset (an addition of ours; the saev project does not
//! read these files and ignores them).
//!
//! - `images.jsonl`: one JSON object per SAEV image, in image order:
//!   `{"path": "<absolute path>", "sha256": "<64 lowercase hex digits>"}`.
//!   A path that is not UTF-8 (a Unix file name may be any bytes) also
//!   gives its bytes, `"path_bytes": "<lowercase hex>"`, `path` then being
//!   their lossy UTF-8 form for display: the file is found again by its
//!   exact name.
//! - `vision.json`: the vision transformer and the geometry of its input:
//!   `{"family", "model", "patch_size", "patch_grid": [rows, cols],
//!   "input_size": [height, width], "registers", "preprocessor_config"}`.
//!
//! Both files are read as untrusted input: lines are capped, the list is
//! never allocated from a count it states, and a grid must tile the
//! metadata's `n_patches_per_img` within the input size.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::metadata::Metadata;
use crate::io::lines::{Line, read_line};
use crate::io::source::{self, JsonCaps};
use crate::{Error, Result, SaevError};

/// The image list's file name.
pub const IMAGES_FILE: &str = "images.jsonl";
/// The vision transformer's description's file name.
pub const VISION_FILE: &str = "vision.json";
/// The longest line of `images.jsonl` read (a path of a few KiB and a hash
/// fit many times over).
pub const MAX_IMAGE_LINE: usize = 64 << 10;

/// One image of the dataset: where it was read from and the SHA-256 of its
/// bytes then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageEntry {
    /// The image file's absolute path (for a path that is not UTF-8, its
    /// lossy form: see `path_bytes`).
    pub path: String,
    /// The SHA-256 of its bytes, 64 lowercase hex digits.
    pub sha256: String,
    /// The path's bytes in lowercase hex, when they are not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
}

impl ImageEntry {
    /// The entry of the image file at `path` holding `bytes`.
    pub fn of(path: &Path, bytes: &[u8]) -> ImageEntry {
        use std::os::unix::ffi::OsStrExt;
        ImageEntry {
            path: path.to_string_lossy().into_owned(),
            sha256: crate::io::checksum::hex(&crate::io::checksum::sha256(bytes)),
            path_bytes: path
                .to_str()
                .is_none()
                .then(|| crate::io::checksum::hex(path.as_os_str().as_bytes())),
        }
    }

    /// The image file's path, exactly as the file system names it.
    pub fn file(&self) -> PathBuf {
        use std::os::unix::ffi::OsStringExt;
        match self.path_bytes.as_deref().and_then(unhex) {
            Some(bytes) => PathBuf::from(std::ffi::OsString::from_vec(bytes)),
            None => PathBuf::from(&self.path),
        }
    }

    /// The file name shown for the image (the path's last component).
    pub fn name(&self) -> &str {
        Path::new(&self.path)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(&self.path)
    }

    /// Why the entry is not well formed, if it is not.
    fn problem(&self) -> Option<String> {
        if !Path::new(&self.path).is_absolute() {
            return Some(format!("the path {:?} is not absolute", self.path));
        }
        if let Some(hex) = &self.path_bytes {
            match unhex(hex) {
                None => return Some(format!("path_bytes {hex:?} is not lowercase hex")),
                Some(bytes) if String::from_utf8_lossy(&bytes) != self.path => {
                    return Some(format!(
                        "path_bytes {hex:?} is not the path {:?}",
                        self.path
                    ));
                }
                Some(_) => {}
            }
        }
        let hex = self.sha256.as_bytes();
        if hex.len() != 64 || !hex.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Some(format!(
                "sha256 {:?} is not 64 lowercase hex digits",
                self.sha256
            ));
        }
        None
    }
}

/// The bytes of `hex`, an even number of lowercase hex digits.
fn unhex(hex: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let hex = hex.as_bytes();
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    hex.chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// The vision transformer a dataset was recorded from and the geometry of
/// the image it sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VisionInfo {
    /// `dinov2`, `clip` or `siglip`.
    pub family: String,
    /// The model directory, as given to the recording.
    pub model: String,
    /// Pixels on a side of a patch.
    pub patch_size: u64,
    /// Patches down and across: `[rows, cols]`.
    pub patch_grid: [u64; 2],
    /// The model's input, `[height, width]` in pixels.
    pub input_size: [u64; 2],
    /// Register tokens the model has (not recorded).
    pub registers: u64,
    /// The model's `preprocessor_config.json`, verbatim.
    pub preprocessor_config: Map<String, Value>,
}

/// The vision families `vision.json` may name.
pub const VISION_FAMILIES: [&str; 3] = ["dinov2", "clip", "siglip"];

impl VisionInfo {
    /// Checks the family, and that the grid holds the metadata's
    /// `n_patches_per_img` patches and fits in the input size.
    fn check(&self, path: &Path, metadata: &Metadata) -> Result<()> {
        let invalid = |reason: String| {
            Error::Saev(SaevError::InvalidVision {
                path: path.to_path_buf(),
                reason,
            })
        };
        if !VISION_FAMILIES.contains(&self.family.as_str()) {
            return Err(invalid(format!(
                "family {:?} is none of {VISION_FAMILIES:?}",
                self.family
            )));
        }
        let [rows, cols] = self.patch_grid;
        if rows.checked_mul(cols) != Some(metadata.n_patches_per_img) {
            return Err(Error::Saev(SaevError::PatchGrid {
                path: path.to_path_buf(),
                rows,
                cols,
                n_patches: metadata.n_patches_per_img,
            }));
        }
        if self.patch_size == 0 {
            return Err(invalid("patch_size is 0".into()));
        }
        let [height, width] = self.input_size;
        let covers = |patches: u64, pixels: u64| {
            patches
                .checked_mul(self.patch_size)
                .is_some_and(|p| p <= pixels)
        };
        if !covers(rows, height) || !covers(cols, width) {
            return Err(invalid(format!(
                "a grid of {rows}×{cols} patches of {} pixels does not fit the input of {height}×{width}",
                self.patch_size
            )));
        }
        Ok(())
    }
}

/// An image dataset's side files, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Images {
    /// One entry per image, in image order.
    pub entries: Vec<ImageEntry>,
    /// The model and its input's geometry.
    pub vision: VisionInfo,
}

/// What became of an image file since the recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageState {
    /// The file holds the bytes recorded.
    Unchanged,
    /// The file is gone (or cannot be read).
    Missing,
    /// The file's bytes differ from those recorded.
    Changed,
}

impl ImageState {
    /// The state of the image `entry` names, reading its file.
    pub fn of(entry: &ImageEntry) -> ImageState {
        ImageFile::read(entry).state
    }
}

/// An image file read again, with what became of it.
#[derive(Debug, Clone)]
pub struct ImageFile {
    /// Whether its bytes are those recorded.
    pub state: ImageState,
    /// Its bytes, unless missing.
    pub bytes: Option<Vec<u8>>,
}

/// The largest image file read, 256 MiB: as much as the largest decoded
/// image the preprocessing accepts, so that no image it could take is
/// refused, and a larger file is refused before its bytes are held.
pub const MAX_IMAGE_BYTES: u64 = 256 << 20;

/// Reads the image file `path` whole: a regular file of at most
/// [`MAX_IMAGE_BYTES`] ([`source::read_capped`]); a FIFO or a device is
/// refused at once.
pub fn read_image_file(path: &Path) -> Result<Vec<u8>> {
    source::read_capped(path, "an image file", MAX_IMAGE_BYTES)
}

impl ImageFile {
    /// Reads the file `entry` names and compares its hash.
    pub fn read(entry: &ImageEntry) -> ImageFile {
        let file = entry.file();
        match read_image_file(&file) {
            Err(_) => ImageFile {
                state: ImageState::Missing,
                bytes: None,
            },
            Ok(bytes) => ImageFile {
                state: if ImageEntry::of(&file, &bytes).sha256 == entry.sha256 {
                    ImageState::Unchanged
                } else {
                    ImageState::Changed
                },
                bytes: Some(bytes),
            },
        }
    }
}

/// How many listed images are missing or changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImageCheck {
    /// Images listed.
    pub images: u64,
    /// Listed images whose file is gone.
    pub missing: Vec<u64>,
    /// Listed images whose bytes differ from those recorded.
    pub changed: Vec<u64>,
}

impl Images {
    /// Reads `dir`'s side files: `None` when neither is there (a text or
    /// foreign dataset), an error when only one is or either breaks a rule.
    pub(crate) fn read(dir: &Path, metadata: &Metadata) -> Result<Option<Images>> {
        let list = dir.join(IMAGES_FILE);
        let vision_path = dir.join(VISION_FILE);
        match (list.exists(), vision_path.exists()) {
            (false, false) => return Ok(None),
            (true, false) => return Err(alone(&list, &vision_path)),
            (false, true) => return Err(alone(&vision_path, &list)),
            (true, true) => {}
        }
        let value = source::read_json(&vision_path, "SAEV vision.json", JsonCaps::CONFIG)?;
        let vision: VisionInfo =
            serde_json::from_value(value).map_err(|e| SaevError::InvalidVision {
                path: vision_path.clone(),
                reason: e.to_string(),
            })?;
        vision.check(&vision_path, metadata)?;
        let entries = read_list(&list, metadata.n_imgs)?;
        Ok(Some(Images { entries, vision }))
    }

    /// Reads every listed image file again and compares its hash, telling
    /// `progress` the images done and the total.
    pub fn check_files(&self, progress: &mut dyn FnMut(u64, u64)) -> ImageCheck {
        let total = self.entries.len() as u64;
        let mut check = ImageCheck {
            images: total,
            ..ImageCheck::default()
        };
        for (img, entry) in (0u64..).zip(&self.entries) {
            match ImageState::of(entry) {
                ImageState::Unchanged => {}
                ImageState::Missing => check.missing.push(img),
                ImageState::Changed => check.changed.push(img),
            }
            progress(img + 1, total);
        }
        check
    }

    /// Writes the side files into the dataset directory `dir` being made.
    pub(crate) fn write(dir: &Path, entries: &[ImageEntry], vision: &VisionInfo) -> Result<()> {
        let vision_text = serde_json::to_string_pretty(vision).expect("vision info serializes");
        write_file(&dir.join(VISION_FILE), |out| {
            out.write_all(vision_text.as_bytes())
        })?;
        write_file(&dir.join(IMAGES_FILE), |out| {
            for entry in entries {
                serde_json::to_writer(&mut *out, entry)?;
                out.write_all(b"\n")?;
            }
            Ok(())
        })
    }
}

/// Checks what a recording gives [`super::Writer::write_images`].
pub(crate) fn check_new(
    entries: &[ImageEntry],
    vision: &VisionInfo,
    metadata: &Metadata,
) -> Result<()> {
    if entries.len() as u64 != metadata.n_imgs {
        return Err(Error::InvalidArgument(format!(
            "{} images listed for a dataset of {} images",
            entries.len(),
            metadata.n_imgs
        )));
    }
    if let Some((img, problem)) = entries
        .iter()
        .enumerate()
        .find_map(|(img, e)| e.problem().map(|p| (img, p)))
    {
        return Err(Error::InvalidArgument(format!("image {img}: {problem}")));
    }
    vision.check(Path::new(VISION_FILE), metadata)
}

/// The error of one side file present without the other.
fn alone(present: &Path, missing: &Path) -> Error {
    Error::Saev(SaevError::ImagesIncomplete {
        present: present.to_path_buf(),
        missing: missing.to_path_buf(),
    })
}

/// Reads `images.jsonl`, which must hold `n_imgs` lines; the list grows
/// with the lines read, never from the count.
fn read_list(path: &Path, n_imgs: u64) -> Result<Vec<ImageEntry>> {
    let (file, _) = source::open_regular(path)?;
    let mut input = BufReader::new(file);
    let mut entries = Vec::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        match read_line(&mut input, &mut line, MAX_IMAGE_LINE).map_err(|e| Error::io(path, e))? {
            Line::End => break,
            Line::TooLong => {
                return Err(Error::Saev(SaevError::ImageLineTooLong {
                    path: path.to_path_buf(),
                    line: number + 1,
                    max: MAX_IMAGE_LINE,
                }));
            }
            Line::Read(_) => {}
        }
        number += 1;
        if number > n_imgs {
            // Count the rest without keeping it, to say how many there are.
            let rest = count_lines(&mut input).map_err(|e| Error::io(path, e))?;
            return Err(count_error(path, n_imgs, number + rest));
        }
        let entry: ImageEntry =
            serde_json::from_slice(&line).map_err(|e| SaevError::ImageEntry {
                path: path.to_path_buf(),
                line: number,
                reason: e.to_string(),
            })?;
        if let Some(reason) = entry.problem() {
            return Err(Error::Saev(SaevError::ImageEntry {
                path: path.to_path_buf(),
                line: number,
                reason,
            }));
        }
        entries.push(entry);
    }
    if number != n_imgs {
        return Err(count_error(path, n_imgs, number));
    }
    Ok(entries)
}

/// The lines left in `input` (a last line without a break counted).
fn count_lines(input: &mut impl Read) -> std::io::Result<u64> {
    let mut buffer = [0u8; 1 << 16];
    let (mut lines, mut last) = (0u64, b'\n');
    loop {
        let read = match input.read(&mut buffer) {
            Ok(0) => return Ok(lines + u64::from(last != b'\n')),
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        lines += memchr::memchr_iter(b'\n', &buffer[..read]).count() as u64;
        last = buffer[read - 1];
    }
}

fn count_error(path: &Path, expected: u64, found: u64) -> Error {
    Error::Saev(SaevError::ImageCount {
        path: path.to_path_buf(),
        expected,
        found,
    })
}

/// Writes `path` whole and fsyncs it.
fn write_file(
    path: &PathBuf,
    body: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<()> {
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    let mut out = BufWriter::new(file);
    body(&mut out)
        .and_then(|()| out.into_inner().map_err(|e| e.into_error()))
        .and_then(|file| file.sync_all())
        .map_err(|e| Error::io(path, e))
}
