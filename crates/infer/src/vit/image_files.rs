//! The image files of a list of inputs (files and directories).

use std::path::PathBuf;

use modelbin_format::io::walk::{has_extension, input_files};

use crate::Result;
use crate::vit::error::ImageError;

/// The extensions a directory's files are kept by (compared ignoring case).
const IMAGE_EXTENSIONS: &[&str] = &["jpg", "jpeg", "png"];

/// The image files `inputs` name, walked as every command walks its inputs
/// ([`input_files`]): a file is kept whatever its extension; a directory
/// gives its `.jpg`, `.jpeg` and `.png` files, recursively, in sorted order.
///
/// An input that does not exist is [`ImageError::NotFound`]; a directory
/// that cannot be read is [`ImageError::Io`]. A FIFO, socket or device,
/// named or found under a directory with an image's extension, is
/// [`modelbin_format::Error::NotRegularFile`] at once: the files are read
/// whole ([`read_image_file`](modelbin_format::saev::read_image_file)),
/// which only a regular file can be without blocking or running on.
pub fn image_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    input_files(inputs, |path| has_extension(path, IMAGE_EXTENSIONS)).map_err(|e| match e {
        modelbin_format::Error::Io { path, source } => {
            if source.kind() == std::io::ErrorKind::NotFound {
                ImageError::NotFound { path }.into()
            } else {
                ImageError::Io {
                    path,
                    reason: source.to_string(),
                }
                .into()
            }
        }
        e => e.into(),
    })
}
