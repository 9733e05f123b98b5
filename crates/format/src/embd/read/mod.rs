//! Reading an EMBD file, one section per file: the fixed header and footer
//! (`header.rs`), the metadata and the keys a model needs (`metadata.rs`),
//! the WordPiece vocabulary (`vocabulary.rs`), and the tensor index
//! (`index.rs`). [`crate::embd::Embd::from_buffer`] runs them in file order.

mod header;
mod index;
mod metadata;
mod vocabulary;

pub use header::{Footer, Header, flags};
pub(in crate::embd) use header::{Sections, read_footer, read_header};
pub(in crate::embd) use index::read_tensor_index;
pub use metadata::{REQUIRED_KEYS, metadata_number};
pub(in crate::embd) use metadata::{check_metadata, read_metadata};
pub use vocabulary::SpecialTokens;
pub(in crate::embd) use vocabulary::{TokenTable, read_vocabulary};
