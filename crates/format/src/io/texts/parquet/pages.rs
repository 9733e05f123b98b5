//! What a Parquet file declares that the parquet crate reserves memory for
//! before checking it, read here first: the schema's child counts in the
//! footer, and each page header's decompressed size.
//!
//! Both are Thrift structs in the compact protocol. A page header's fields
//! 2 (`uncompressed_page_size`) and 3 (`compressed_page_size`) are `i32`;
//! the footer's field 2 is the list of schema elements, whose field 5
//! (`num_children`) is `i32`. Every other field is skipped by its wire
//! type, nested structs to a fixed depth. Every count read from the file is
//! checked against the bytes left before it is used, so each walk is
//! linear in what it reads.

/// How deep nested structs, lists and maps may go in a page header (the
/// format's own headers nest three deep).
const MAX_DEPTH: u32 = 16;

/// How deep a file's schema may nest (a text column sits at depth 1; the
/// nested types Hugging Face datasets write stay within a few levels).
const MAX_SCHEMA_DEPTH: usize = 64;

/// The decompressed bytes the pages of the column chunk at
/// `start..start + length` in `file` declare, or why the chunk is broken:
/// a range outside the file, a header that does not parse, a negative size
/// or a page that runs past the chunk.
pub(super) fn declared_bytes(file: &[u8], start: i64, length: i64) -> Result<u64, String> {
    let range = usize::try_from(start)
        .ok()
        .zip(usize::try_from(length).ok())
        .and_then(|(start, length)| Some(start..start.checked_add(length)?))
        .filter(|range| range.end <= file.len())
        .ok_or_else(|| {
            format!("its chunk at offset {start}, {length} bytes, is outside the file")
        })?;
    let chunk = &file[range];
    let mut at = 0usize;
    let mut declared = 0u64;
    while at < chunk.len() {
        let mut header = Compact {
            bytes: &chunk[at..],
            at: 0,
        };
        let (decompressed, compressed) = header
            .page_sizes()
            .ok_or_else(|| format!("the page header at chunk offset {at} does not parse"))?;
        let sizes = u64::try_from(decompressed)
            .ok()
            .zip(usize::try_from(compressed).ok());
        let Some((decompressed, compressed)) = sizes else {
            return Err(format!(
                "the page at chunk offset {at} declares a negative size"
            ));
        };
        at = (at + header.at)
            .checked_add(compressed)
            .filter(|&end| end <= chunk.len())
            .ok_or_else(|| format!("the page at chunk offset {at} runs past its chunk"))?;
        declared = declared.saturating_add(decompressed);
    }
    Ok(declared)
}

/// Checks the schema in the footer of `file` (a Parquet file): its
/// elements' child counts must make one tree of them, in preorder, at most
/// [`MAX_SCHEMA_DEPTH`] deep. The decoder reserves each count before it
/// reads the children and recurses per level; a tree bounds both by the
/// number of elements. A footer that cannot be found or read is left to the
/// decoder to report.
pub(super) fn check_schema(file: &[u8]) -> Result<(), String> {
    let Some(counts) = footer(file).and_then(schema_children) else {
        return Ok(());
    };
    // The children each open group still expects, innermost last.
    let mut open: Vec<i64> = Vec::new();
    for (index, &children) in counts.iter().enumerate() {
        if children < 0 {
            return Err(format!(
                "schema element {index} declares {children} children"
            ));
        }
        if index > 0 {
            let Some(parent) = open.last_mut() else {
                return Err(format!("schema element {index} is outside the root's tree"));
            };
            *parent -= 1;
        }
        if children > 0 {
            open.push(children);
            if open.len() > MAX_SCHEMA_DEPTH {
                return Err(format!(
                    "the schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
                ));
            }
        }
        while open.last() == Some(&0) {
            open.pop();
        }
    }
    match open.last() {
        Some(missing) => Err(format!(
            "the schema declares {missing} more children than its {} elements hold",
            counts.len()
        )),
        None => Ok(()),
    }
}

/// The child count of each schema element in the footer's metadata
/// (`FileMetaData`), 0 for one that declares none; `None` if the footer
/// does not parse that far.
fn schema_children(footer: &[u8]) -> Option<Vec<i64>> {
    let mut metadata = Compact {
        bytes: footer,
        at: 0,
    };
    let mut field = 0i16;
    loop {
        let (id, kind) = metadata.field_header(&mut field)??;
        if id != 2 || kind != LIST {
            metadata.skip(kind, 0)?;
            continue;
        }
        let (elements, STRUCT) = metadata.list_header()? else {
            return None;
        };
        metadata.enough_for(elements)?;
        let mut counts = Vec::with_capacity(elements as usize);
        for _ in 0..elements {
            counts.push(metadata.children()?.unwrap_or(0));
        }
        return Some(counts);
    }
}

/// The footer's metadata bytes: the length before the closing magic
/// `PAR1` names them.
fn footer(file: &[u8]) -> Option<&[u8]> {
    let (rest, magic) = file.split_at_checked(file.len().checked_sub(4)?)?;
    if magic != b"PAR1" {
        return None;
    }
    let (rest, length) = rest.split_at_checked(rest.len().checked_sub(4)?)?;
    let length = usize::try_from(u32::from_le_bytes(length.try_into().ok()?)).ok()?;
    rest.get(rest.len().checked_sub(length)?..)
}

/// A reader of the Thrift compact protocol over a byte slice; `None` is
/// any malformation, including running out of bytes.
struct Compact<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Compact<'_> {
    /// A page header's `(uncompressed_page_size, compressed_page_size)`,
    /// leaving `at` just past the header.
    fn page_sizes(&mut self) -> Option<(i32, i32)> {
        let (mut decompressed, mut compressed) = (None, None);
        let mut field = 0i16;
        loop {
            let Some((id, kind)) = self.field_header(&mut field)? else {
                return Some((decompressed?, compressed?));
            };
            match (id, kind) {
                (2, I32) => decompressed = Some(i32::try_from(self.int()?).ok()?),
                (3, I32) => compressed = Some(i32::try_from(self.int()?).ok()?),
                _ => self.skip(kind, 0)?,
            }
        }
    }

    /// A schema element's `num_children`, when it has one, leaving `at`
    /// past the element.
    fn children(&mut self) -> Option<Option<i64>> {
        let mut children = None;
        let mut field = 0i16;
        while let Some((id, kind)) = self.field_header(&mut field)? {
            match (id, kind) {
                (5, I32) => children = Some(self.int()?),
                _ => self.skip(kind, 0)?,
            }
        }
        Some(children)
    }

    /// A list's or a set's header: its count and element type.
    fn list_header(&mut self) -> Option<(u64, u8)> {
        let header = self.byte()?;
        let mut count = u64::from(header >> 4);
        if count == 15 {
            count = self.varint()?;
        }
        Some((count, header & 0x0f))
    }

    /// The next field's id and wire type, `None` inside at the struct's
    /// stop byte; `last` is the previous field's id, which short headers
    /// count from.
    fn field_header(&mut self, last: &mut i16) -> Option<Option<(i16, u8)>> {
        let byte = self.byte()?;
        if byte == 0 {
            return Some(None);
        }
        let delta = byte >> 4;
        *last = if delta == 0 {
            i16::try_from(self.int()?).ok()?
        } else {
            last.checked_add(i16::from(delta))?
        };
        Some(Some((*last, byte & 0x0f)))
    }

    /// Skips one value of wire type `kind`.
    fn skip(&mut self, kind: u8, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match kind {
            BOOL_TRUE | BOOL_FALSE => {}
            BYTE => self.take(1)?,
            I16 | I32 | I64 => {
                self.int()?;
            }
            DOUBLE => self.take(8)?,
            BINARY => {
                let length = usize::try_from(self.varint()?).ok()?;
                self.take(length)?;
            }
            LIST | SET => {
                let (count, kind) = self.list_header()?;
                self.skip_values(count, kind, depth)?;
            }
            MAP => {
                let count = self.varint()?;
                if count > 0 {
                    let kinds = self.byte()?;
                    // A key and a value per entry: twice the values.
                    self.skip_pairs(count, kinds >> 4, kinds & 0x0f, depth)?;
                }
            }
            STRUCT => {
                let mut field = 0i16;
                while let Some((_, kind)) = self.field_header(&mut field)? {
                    self.skip(kind, depth + 1)?;
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// Skips `count` values of wire type `kind` (a list's or a set's). The
    /// protocol gives each value at least a byte, so a count larger than
    /// the bytes left is refused before the loop. Booleans are skipped as
    /// taking no bytes, as the parquet crate skips them, so that both walk
    /// a header to the same end (the crate, not this walk, then reads the
    /// page that follows).
    fn skip_values(&mut self, count: u64, kind: u8, depth: u32) -> Option<()> {
        self.enough_for(count)?;
        for _ in 0..count {
            self.skip(kind, depth + 1)?;
        }
        Some(())
    }

    /// Skips `count` map entries of key type `key` and value type `value`.
    fn skip_pairs(&mut self, count: u64, key: u8, value: u8, depth: u32) -> Option<()> {
        self.enough_for(count)?;
        for _ in 0..count {
            self.skip_values(1, key, depth)?;
            self.skip_values(1, value, depth)?;
        }
        Some(())
    }

    /// `Some` when at least `count` bytes are left.
    fn enough_for(&self, count: u64) -> Option<()> {
        (count <= (self.bytes.len() - self.at) as u64).then_some(())
    }

    fn byte(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    fn take(&mut self, count: usize) -> Option<()> {
        self.at = self.at.checked_add(count)?;
        (self.at <= self.bytes.len()).then_some(())
    }

    /// An unsigned LEB128 varint of at most ten bytes.
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f).checked_shl(shift)?;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// A zigzag-encoded integer (Thrift's i16, i32 and i64).
    fn int(&mut self) -> Option<i64> {
        let raw = self.varint()?;
        Some((raw >> 1) as i64 ^ -((raw & 1) as i64))
    }
}

const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;

#[cfg(test)]
mod tests {
    use super::*;

    /// A page header declaring `decompressed` and `compressed` bytes, with
    /// a data page header struct (field 5) holding a nested statistics
    /// struct with a binary value, as pyarrow writes them.
    fn header(decompressed: i32, compressed: i32) -> Vec<u8> {
        let zigzag = |v: i32| ((v << 1) ^ (v >> 31)) as u32;
        let mut bytes = vec![0x15, 0x00]; // field 1, i32: type 0 (DATA_PAGE)
        for value in [decompressed, compressed] {
            bytes.push(0x15); // next field, i32
            let mut raw = zigzag(value);
            loop {
                let low = (raw & 0x7f) as u8;
                raw >>= 7;
                bytes.push(if raw == 0 { low } else { low | 0x80 });
                if raw == 0 {
                    break;
                }
            }
        }
        // field 5, a struct: field 1 i32 (num_values 3), field 5 struct
        // (statistics: field 1 binary "ab"), stops.
        bytes.extend([
            0x2c, 0x15, 0x06, 0x4c, 0x18, 0x02, b'a', b'b', 0x00, 0x00, 0x00,
        ]);
        bytes
    }

    #[test]
    fn pages_are_walked_by_their_declared_sizes() {
        let mut chunk = header(100, 3);
        chunk.extend([1, 2, 3]);
        chunk.extend(header(7, 0));
        let length = chunk.len() as i64;
        let mut file = vec![9u8; 4];
        file.extend(&chunk);
        assert_eq!(declared_bytes(&file, 4, length), Ok(107));
    }

    #[test]
    fn broken_chunks_are_refused_not_followed() {
        let page = header(100, 3);
        let length = page.len() as i64;
        // The body runs past the chunk.
        let past = declared_bytes(&page, 0, length).unwrap_err();
        assert!(past.contains("runs past its chunk"), "{past}");
        // A range outside the file, or negative.
        assert!(declared_bytes(&page, 1, length).is_err());
        assert!(declared_bytes(&page, -1, 2).is_err());
        assert!(declared_bytes(&page, 0, i64::MAX).is_err());
        // A negative size.
        let mut negative = header(-5, 0);
        let length = negative.len() as i64;
        assert!(
            declared_bytes(&negative, 0, length)
                .unwrap_err()
                .contains("negative")
        );
        // A header cut short, and a list claiming more values than bytes.
        negative.truncate(3);
        assert!(
            declared_bytes(&negative, 0, 3)
                .unwrap_err()
                .contains("does not parse")
        );
        let huge_list = [0x19, 0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f];
        assert!(declared_bytes(&huge_list, 0, 7).is_err());
    }

    /// A footer whose schema is `elements` structs, the first declaring
    /// `children` children, framed as a file's end.
    fn file_with_schema(elements: u8, children: u8) -> Vec<u8> {
        // Field 1 (version, i32 1), field 2: a list of `elements` structs.
        let mut footer = vec![0x15, 0x02, 0x19, (elements << 4) | STRUCT];
        // The root: field 4 (name, binary "s"), field 5 (num_children).
        footer.extend([0x48, 0x01, b's', 0x15, children << 1, 0x00]);
        for _ in 1..elements {
            footer.extend([0x48, 0x01, b'c', 0x00]);
        }
        footer.push(0x00);
        let mut file = b"PAR1".to_vec();
        file.extend(&footer);
        file.extend((footer.len() as u32).to_le_bytes());
        file.extend(b"PAR1");
        file
    }

    #[test]
    fn a_schema_whose_counts_make_no_tree_is_refused() {
        assert_eq!(check_schema(&file_with_schema(3, 2)), Ok(()));
        let refused = check_schema(&file_with_schema(3, 9)).unwrap_err();
        assert!(refused.contains("declares 7 more children"), "{refused}");
        let refused = check_schema(&file_with_schema(3, 1)).unwrap_err();
        assert!(
            refused.contains("element 2 is outside the root's tree"),
            "{refused}"
        );
        // Not a footer at all: left to the decoder.
        assert_eq!(check_schema(b"PAR1"), Ok(()));
        assert_eq!(check_schema(b"xx\xff\xff\xff\x7fPAR1"), Ok(()));
    }

    #[test]
    fn nesting_is_bounded() {
        // Field 1 a struct whose field 1 is a struct, ... deeper than
        // MAX_DEPTH.
        let deep = vec![0x1c; 64];
        assert!(declared_bytes(&deep, 0, 64).is_err());
    }
}
