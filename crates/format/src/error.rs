//! The one error type of this crate.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading, validating or writing a file.
///
/// Each validation rule has its own variant so that callers (and tests) can
/// tell them apart; the message names the byte offset where it applies.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O failure.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A path that must be a regular file is something else (a directory,
    /// a FIFO, a device): refused at once, without reading or blocking.
    #[error("{path}: is {kind}, not a regular file")]
    NotRegularFile {
        /// The path.
        path: PathBuf,
        /// What it is: "a directory", "a FIFO", "a device", ...
        kind: &'static str,
    },
    /// A file read whole (a JSON document, a text list) is above its cap.
    #[error("{path}: {what} is {size} bytes, over the limit of {limit} bytes")]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// What the file is (for example "SAEV metadata.json").
        what: &'static str,
        /// Its size (or the bytes read before giving up).
        size: u64,
        /// The documented cap.
        limit: u64,
    },
    /// A JSON document holds more values than its documented cap.
    #[error("{what} holds up to {values} JSON values, over the limit of {limit}")]
    TooManyJsonValues {
        /// The document.
        what: &'static str,
        /// An upper bound on the values it holds.
        values: u64,
        /// The documented cap.
        limit: u64,
    },
    /// A count in the file is above the format's documented cap.
    #[error("{what} {count} at byte {offset} exceeds the limit of {limit}")]
    CountTooLarge {
        /// The field.
        what: &'static str,
        /// Absolute byte offset of the field.
        offset: u64,
        /// The value found.
        count: u64,
        /// The documented cap.
        limit: u64,
    },
    /// An output path names one of the operation's inputs.
    #[error("{output}: the output is the input {input}; write to another path")]
    OutputIsInput {
        /// The output path.
        output: PathBuf,
        /// The input file it is (same device and inode).
        input: PathBuf,
    },
    /// The input ended before a field could be read.
    #[error("truncated {what} at byte {offset}: needs {needed} bytes, {available} left")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Absolute byte offset of the field.
        offset: u64,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes that remained.
        available: u64,
    },
    /// The declared header size is above the format's limit.
    #[error("header size {size} at byte 0 exceeds the limit of {limit} bytes")]
    HeaderTooLarge {
        /// The declared (or, when writing, the encoded) header size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The declared header runs past the end of the file.
    #[error(
        "header of {size} bytes declared at byte 0 runs past the end of the {file_len}-byte file"
    )]
    HeaderPastEnd {
        /// Declared header size.
        size: u64,
        /// Actual file size.
        file_len: u64,
    },
    /// A varint starts with a tag byte that no encoding uses (0xFE, 0xFF).
    #[error("invalid varint tag 0x{tag:02X} at byte {offset}")]
    InvalidVarintTag {
        /// Offset of the tag byte.
        offset: u64,
        /// The tag byte.
        tag: u8,
    },
    /// A varint uses more bytes than its value needs.
    #[error(
        "non-canonical varint at byte {offset}: {value} is encoded in a longer form than needed"
    )]
    NonCanonicalVarint {
        /// Offset of the varint.
        offset: u64,
        /// The decoded value.
        value: u64,
    },
    /// An `Option` tag other than 0 or 1.
    #[error("invalid option tag {tag} at byte {offset} (expected 0 or 1)")]
    InvalidOptionTag {
        /// Offset of the tag.
        offset: u64,
        /// The tag found.
        tag: u8,
    },
    /// A dtype code or name this format does not define.
    #[error("unknown dtype {found} at byte {offset}")]
    UnknownDtype {
        /// Offset of the dtype field.
        offset: u64,
        /// The code or name found.
        found: String,
    },
    /// A string field is not valid UTF-8.
    #[error("{what} at byte {offset} is not valid UTF-8")]
    InvalidUtf8 {
        /// The field.
        what: &'static str,
        /// Offset of the string's bytes.
        offset: u64,
    },
    /// Two tensors share a name.
    #[error("duplicate tensor name `{name}`{at}")]
    DuplicateTensorName {
        /// The repeated name.
        name: String,
        /// Where the second occurrence starts, when reading.
        at: At,
    },
    /// Two metadata entries share a key.
    #[error("duplicate metadata key `{key}`{at}")]
    DuplicateMetadataKey {
        /// The repeated key.
        key: String,
        /// Where the second occurrence starts.
        at: At,
    },
    /// A tensor's data range does not start where the previous one ended.
    #[error(
        "tensor `{name}` (header byte {offset}): data range {start}..{end} should start at {expected} (ranges must follow each other from 0, with no gap beyond alignment padding)"
    )]
    NonContiguousData {
        /// Tensor name.
        name: String,
        /// Offset of the tensor's entry in the file.
        offset: u64,
        /// Declared start.
        start: u64,
        /// Declared end.
        end: u64,
        /// Where it should start.
        expected: u64,
    },
    /// A tensor's data range ends before it starts.
    #[error(
        "tensor `{name}` (header byte {offset}): data range {start}..{end} ends before it starts"
    )]
    ReversedDataRange {
        /// Tensor name.
        name: String,
        /// Offset of the tensor's entry in the file.
        offset: u64,
        /// Declared start.
        start: u64,
        /// Declared end.
        end: u64,
    },
    /// The byte count of a tensor disagrees with dtype × shape.
    #[error("tensor `{name}`{at}: {dtype} {shape:?} needs {expected} bytes, found {found}")]
    ByteCountMismatch {
        /// Tensor name.
        name: String,
        /// Where its entry starts, when reading.
        at: At,
        /// Its dtype.
        dtype: crate::DType,
        /// Its shape.
        shape: Vec<usize>,
        /// Bytes that dtype × shape needs.
        expected: u64,
        /// Bytes it has.
        found: u64,
    },
    /// Arithmetic on sizes or offsets from the file overflows 64 bits.
    #[error("{what} overflows 64 bits{at}")]
    Overflow {
        /// The quantity being computed.
        what: String,
        /// Where the inputs were read.
        at: At,
    },
    /// Bytes other than the padding follow the encoded header.
    #[error(
        "{count} unexpected bytes after the header payload at byte {offset}, before the padding"
    )]
    JunkAfterHeader {
        /// Offset of the first unexpected byte.
        offset: u64,
        /// How many there are.
        count: u64,
    },
    /// The header is padded with fewer bytes than the alignment needs.
    #[error(
        "header ends at byte {offset}, which is not 8-byte aligned: padding must be {expected} bytes, found {found}"
    )]
    ShortPadding {
        /// Where the header ends.
        offset: u64,
        /// Padding bytes the alignment needs.
        expected: u64,
        /// Padding bytes present.
        found: u64,
    },
    /// A padding byte is not the expected filler.
    #[error("padding byte 0x{byte:02X} at byte {offset} (expected 0x{expected:02X})")]
    BadPadding {
        /// Offset of the byte.
        offset: u64,
        /// The byte found.
        byte: u8,
        /// The filler the format uses.
        expected: u8,
    },
    /// The file is shorter than its header says.
    #[error(
        "data section truncated: the header describes {expected} bytes of data starting at byte {offset}, the file has {found}"
    )]
    DataTruncated {
        /// Where the data section starts.
        offset: u64,
        /// Bytes the header describes.
        expected: u64,
        /// Bytes present.
        found: u64,
    },
    /// The file continues past its last described byte.
    #[error(
        "{count} trailing bytes at byte {offset}, past the end of the data the header describes"
    )]
    TrailingBytes {
        /// Offset of the first trailing byte.
        offset: u64,
        /// How many there are.
        count: u64,
    },
    /// A structurally invalid header (JSON formats, missing fields, wrong types).
    #[error("invalid {format} header at byte {offset}: {reason}")]
    InvalidHeader {
        /// The format.
        format: &'static str,
        /// Offset of the header or of the offending part.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// No tensor has the requested name.
    #[error("no tensor named `{0}`")]
    TensorNotFound(String),
    /// More indices than the tensor has dimensions.
    #[error("{given} indices for a tensor of rank {rank}")]
    TooManyIndices {
        /// Indices given.
        given: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// An index or range outside a dimension.
    #[error("index {start}..{stop} is out of range for dimension {dim} of size {size}")]
    IndexOutOfRange {
        /// The dimension.
        dim: usize,
        /// Start of the requested range.
        start: usize,
        /// End (exclusive) of the requested range.
        stop: usize,
        /// The dimension's size.
        size: usize,
    },
    /// A dtype that the target format cannot represent.
    #[error("tensor `{name}`: dtype {dtype} cannot be stored in {format}")]
    UnsupportedDtype {
        /// Tensor name.
        name: String,
        /// The dtype.
        dtype: String,
        /// The target format.
        format: &'static str,
    },
    /// The file does not start with the format's magic bytes.
    #[error("bad magic at byte 0: expected {expected}, found {found}")]
    BadMagic {
        /// The magic the format uses.
        expected: &'static str,
        /// What the file has (escaped).
        found: String,
    },
    /// A version this reader does not support.
    #[error("{format} version {found} at byte {offset} is not supported (expected {expected})")]
    UnsupportedVersion {
        /// The format.
        format: &'static str,
        /// Offset of the version field.
        offset: u64,
        /// Version found.
        found: u32,
        /// Version supported.
        expected: u32,
    },
    /// The file size disagrees with what the header implies.
    #[error("the header implies a file of {expected} bytes, the file has {found}")]
    FileSizeMismatch {
        /// Size the header implies.
        expected: u64,
        /// Actual size.
        found: u64,
    },
    /// A vocabulary with no tokens.
    #[error("the vocabulary has no tokens (token_count 0 at byte {offset})")]
    EmptyVocabulary {
        /// Offset of the count field.
        offset: u64,
    },
    /// A token's bytes lie outside the token blob.
    #[error(
        "token {rank} (table entry at byte {offset}): bytes {start}..{end} lie outside the {blob_size}-byte blob"
    )]
    TokenOutsideBlob {
        /// The token's rank.
        rank: u32,
        /// Offset of its table entry.
        offset: u64,
        /// Start within the blob.
        start: u64,
        /// End within the blob.
        end: u64,
        /// Size of the blob.
        blob_size: u64,
    },
    /// A token whose bytes start before the previous token's end: token
    /// bytes lie in the blob in rank order and never share bytes.
    #[error(
        "token {rank} (table entry at byte {offset}) starts at blob byte {start}, before the previous token's end at {previous_end}: token bytes must not overlap and must be in rank order"
    )]
    OverlappingToken {
        /// The token's rank.
        rank: u32,
        /// Offset of its table entry.
        offset: u64,
        /// Its start within the blob.
        start: u64,
        /// Where the previous non-empty token ends.
        previous_end: u64,
    },
    /// A token longer than the declared maximum.
    #[error("token {rank} (table entry at byte {offset}) is {len} bytes, over max_token_len {max}")]
    TokenTooLong {
        /// The token's rank.
        rank: u32,
        /// Offset of its table entry.
        offset: u64,
        /// Its length.
        len: u32,
        /// The declared maximum.
        max: u32,
    },
    /// The declared maximum token length is not the longest token's length.
    #[error("max_token_len at byte 12 says {declared}, the longest token is {actual} bytes")]
    MaxTokenLenMismatch {
        /// Declared in the header.
        declared: u32,
        /// Actual longest token.
        actual: u32,
    },
    /// An empty table entry whose offset is not 0.
    #[error(
        "token {rank} (table entry at byte {offset}) is empty but has offset {start} (an absent rank is (0, 0))"
    )]
    NonCanonicalEmptyToken {
        /// The rank.
        rank: u32,
        /// Offset of the table entry.
        offset: u64,
        /// The stray offset.
        start: u32,
    },
    /// Two ranks with the same bytes.
    #[error("token {rank} (table entry at byte {offset}) has the same bytes as token {earlier}")]
    DuplicateToken {
        /// The later rank.
        rank: u32,
        /// Offset of its table entry.
        offset: u64,
        /// The earlier rank with those bytes.
        earlier: u32,
    },
    /// Reserved bytes that are not zero.
    #[error("reserved byte at {offset} is 0x{byte:02X}, must be 0")]
    NonZeroReserved {
        /// Offset of the byte.
        offset: u64,
        /// Its value.
        byte: u8,
    },
    /// A malformed line of a `.tiktoken` file.
    #[error(".tiktoken line {line} (byte {offset}): {reason}")]
    InvalidTiktokenLine {
        /// 1-based line number.
        line: usize,
        /// Offset of the line's start.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A TLLM file whose magic is written big-endian (ASCII "TLLM").
    #[error(
        "bad magic at byte 0: the bytes spell \"TLLM\", but the magic is the u32 0x544C4C4D written little-endian, i.e. bytes 4D 4C 4C 54 (\"MLLT\"); this file was written with the wrong byte order"
    )]
    TllmMagicByteOrder,
    /// A model configuration value out of range.
    #[error("invalid configuration: {field} = {value} at byte {offset}: {reason}")]
    InvalidConfig {
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
        /// Offset of the field.
        offset: u64,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// A tensor's stored dimensions disagree with the configuration.
    #[error(
        "tensor `{tensor}`: dimensions at byte {offset} are {found}, the configuration needs {expected}"
    )]
    DimensionMismatch {
        /// The tensor.
        tensor: String,
        /// Offset of its dimension prefix.
        offset: u64,
        /// What the configuration needs.
        expected: String,
        /// What the file says.
        found: String,
    },
    /// A SAEV directory whose name is not its metadata's hash.
    #[error(
        "{dir}: the directory name is not the metadata's hash {expected} (metadata.json was changed, or the directory renamed)"
    )]
    SaevHashMismatch {
        /// The dataset directory.
        dir: PathBuf,
        /// The hash of its metadata.
        expected: String,
    },
    /// A SAEV shard the metadata requires is missing.
    #[error("{path}: shard missing (the metadata implies {expected} shards)")]
    MissingShard {
        /// The missing file.
        path: PathBuf,
        /// How many shards there should be.
        expected: u64,
    },
    /// A SAEV shard of the wrong size.
    #[error("{path}: shard is {found} bytes, expected {expected}")]
    ShardSize {
        /// The shard.
        path: PathBuf,
        /// Allowed size(s).
        expected: String,
        /// Its size.
        found: u64,
    },
    /// A shard file beyond what the metadata describes.
    #[error("{path}: unexpected shard (the metadata implies {expected} shards)")]
    UnexpectedShard {
        /// The file.
        path: PathBuf,
        /// How many shards there should be.
        expected: u64,
    },
    /// A SAEV coordinate or view that the dataset cannot serve.
    #[error("{0}")]
    InvalidCoordinate(String),
    /// A dataset is already there.
    #[error("{path}: {reason}")]
    DatasetExists {
        /// The existing directory.
        path: PathBuf,
        /// Same dataset, or a different one.
        reason: &'static str,
    },
    /// Tokens that cannot make a vocabulary (duplicate ranks, too sparse ranks).
    #[error("invalid vocabulary: {0}")]
    InvalidVocabulary(String),
    /// A tensor name the target format reserves.
    #[error("tensor name `{name}` is reserved in {format}")]
    ReservedName {
        /// The name.
        name: String,
        /// The format.
        format: &'static str,
    },
    /// Flag bits this reader does not know, or that it cannot handle.
    #[error("flags 0x{flags:08X} at byte {offset}: {reason}")]
    UnsupportedFlags {
        /// Offset of the flags field.
        offset: u64,
        /// The flags.
        flags: u32,
        /// Which bits are the problem.
        reason: String,
    },
    /// A stored CRC-32 that does not match the bytes it covers.
    #[error(
        "{section} checksum mismatch: stored 0x{stored:08X} at byte {offset}, computed 0x{computed:08X} (the {section} is corrupt)"
    )]
    ChecksumMismatch {
        /// The section the checksum covers.
        section: &'static str,
        /// Offset of the stored checksum.
        offset: u64,
        /// The stored value.
        stored: u32,
        /// The value computed over the bytes.
        computed: u32,
    },
    /// A section that does not start where the layout puts it.
    #[error(
        "{section} at byte {found} (header field at byte {offset}): it must start at byte {expected}"
    )]
    SectionMisplaced {
        /// The section.
        section: &'static str,
        /// Offset of the header field that places it.
        offset: u64,
        /// Where the layout puts it.
        expected: u64,
        /// Where the header puts it.
        found: u64,
    },
    /// Two tensors' data ranges overlap.
    #[error("tensor `{second}` (descriptor at byte {offset}) overlaps tensor `{first}`")]
    OverlappingTensors {
        /// The tensor that starts first.
        first: String,
        /// The tensor that starts inside it.
        second: String,
        /// Offset of the second tensor's descriptor.
        offset: u64,
    },
    /// A tensor whose data does not start on the alignment the flags promise.
    #[error(
        "tensor `{name}` (descriptor at byte {offset}): data offset {data_offset} is not a multiple of {alignment}"
    )]
    MisalignedTensor {
        /// Tensor name.
        name: String,
        /// Offset of its descriptor.
        offset: u64,
        /// Its data offset.
        data_offset: u64,
        /// The alignment required.
        alignment: u64,
    },
    /// A stored name hash that is not the hash of the stored name.
    #[error(
        "tensor `{name}` (descriptor at byte {offset}): stored name hash 0x{stored:08X}, FNV-1a of the name is 0x{computed:08X}"
    )]
    NameHashMismatch {
        /// Tensor name.
        name: String,
        /// Offset of its descriptor.
        offset: u64,
        /// The stored hash.
        stored: u32,
        /// The hash of the name.
        computed: u32,
    },
    /// A required metadata key is absent.
    #[error("required metadata key `{key}` is missing")]
    MissingMetadata {
        /// The key.
        key: &'static str,
    },
    /// A metadata value that cannot be used.
    #[error("metadata `{key}` = {value:?}: {reason}")]
    InvalidMetadata {
        /// The key.
        key: String,
        /// Its value.
        value: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A model file lacks a tensor the model needs.
    #[error("required tensor `{name}` is missing")]
    MissingTensor {
        /// The tensor.
        name: String,
    },
    /// A tensor whose dtype the model cannot use.
    #[error("tensor `{name}` is {dtype}; {expected}")]
    WrongDtype {
        /// The tensor.
        name: String,
        /// Its dtype.
        dtype: crate::DType,
        /// What is allowed.
        expected: &'static str,
    },
    /// Data that the target format has no way to store.
    #[error("cannot be written as {format}: {reason}")]
    Unrepresentable {
        /// The target format.
        format: &'static str,
        /// What does not fit.
        reason: String,
    },
    /// The file's format was recognised but this operation does not handle it.
    #[error("{format} files are not supported by {operation}")]
    UnsupportedFormat {
        /// The format.
        format: crate::Format,
        /// The operation.
        operation: &'static str,
    },
    /// An argument a caller passed to a library function cannot be used
    /// (not a property of any file).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The content matches no known format.
    #[error(
        "{path}: not a recognised format (no known magic bytes, not a BinTensors or safetensors header)"
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// An optional byte offset, displayed as ` at byte N` when present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At(pub Option<u64>);

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(offset) => write!(f, " at byte {offset}"),
            None => Ok(()),
        }
    }
}
