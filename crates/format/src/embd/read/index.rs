//! The tensor index: descriptors, names, and where each tensor's data lies.

use crate::error::At;
use crate::io::bytes::ByteReader;
use crate::io::checksum::fnv1a32;
use crate::tensor::table::{TableBuilder, TensorTable};
use crate::{DType, EmbdError, Error, LayoutError, Result};

use super::header::{Header, Sections, flags};
use crate::embd::{ALIGNMENT, DESCRIPTOR_LEN};

/// One parsed tensor descriptor.
struct Descriptor<'a> {
    at: u64,
    name: &'a str,
    dtype: DType,
    shape: Vec<usize>,
    data_offset: u64,
}

pub(in crate::embd) fn read_tensor_index(
    file: &[u8],
    h: &Header,
    sections: &Sections,
) -> Result<(TensorTable, Vec<u64>)> {
    let index_start = u64::from(h.tensor_index_offset);
    let data_offset = u64::from(h.tensor_data_offset);
    let count = h.tensor_index_count as usize;
    let mut r = ByteReader::new(
        &file[index_start as usize..data_offset as usize],
        index_start,
    );
    // The descriptors fit before the data offset (checked by `Sections`).
    let descriptor_bytes = r.bytes(sections.index_end - index_start, "tensor descriptors")?;
    let mut names = r.clone();
    let mut descriptors = Vec::with_capacity(count);
    for (i, raw) in descriptor_bytes
        .chunks_exact(DESCRIPTOR_LEN as usize)
        .enumerate()
    {
        let at = index_start + i as u64 * DESCRIPTOR_LEN;
        descriptors.push(read_descriptor(raw, at, &mut names)?);
    }
    let index_end = names.offset();
    let alignment = if h.has(flags::TENSORS_ALIGNED) {
        ALIGNMENT
    } else {
        1
    };
    let expected_data_offset = index_end.next_multiple_of(alignment);
    if data_offset != expected_data_offset {
        return Err(Error::Embd(EmbdError::SectionMisplaced {
            section: "tensor data",
            offset: 36,
            expected: expected_data_offset,
            found: data_offset,
        }));
    }
    check_zero(names.rest(), index_end)?;
    place_tensors(file, h, descriptors, alignment)
}

fn read_descriptor<'a>(raw: &[u8], at: u64, names: &mut ByteReader<'a>) -> Result<Descriptor<'a>> {
    let mut d = ByteReader::new(raw, at);
    let name_hash = d.u32_le("name_hash")?;
    let dtype_code = d.u8("dtype")?;
    let ndim = d.u8("ndim")?;
    let name_len = d.u16_le("name_length")?;
    let mut dims = [0u32; 4];
    for dim in &mut dims {
        *dim = d.u32_le("shape")?;
    }
    let data_offset = d.u64_le("data_offset")?;
    let name = names.str(u64::from(name_len), "tensor name")?;
    let dtype = DType::from_embd_code(dtype_code).ok_or_else(|| {
        Error::Layout(LayoutError::UnknownDtype {
            offset: at + 4,
            found: dtype_code.to_string(),
        })
    })?;
    if !(1..=4).contains(&ndim) {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: at + 5,
            reason: format!("tensor `{name}` has ndim {ndim}; it must be 1 to 4"),
        }));
    }
    if let Some(extra) = dims[usize::from(ndim)..].iter().position(|&d| d != 0) {
        return Err(Error::Layout(LayoutError::InvalidHeader {
            format: "EMBD",
            offset: at + 8 + 4 * (u64::from(ndim) + extra as u64),
            reason: format!(
                "tensor `{name}` has ndim {ndim} but a non-zero shape[{}]",
                usize::from(ndim) + extra
            ),
        }));
    }
    let computed = fnv1a32(name.as_bytes());
    if computed != name_hash {
        return Err(Error::Embd(EmbdError::NameHashMismatch {
            name: name.to_owned(),
            offset: at,
            stored: name_hash,
            computed,
        }));
    }
    Ok(Descriptor {
        at,
        name,
        dtype,
        shape: dims[..usize::from(ndim)]
            .iter()
            .map(|&d| d as usize)
            .collect(),
        data_offset,
    })
}

/// Checks the tensors' placement (aligned, inside the data section, no
/// overlap, zero padding between them) and builds the table in data order.
fn place_tensors(
    file: &[u8],
    h: &Header,
    mut descriptors: Vec<Descriptor<'_>>,
    alignment: u64,
) -> Result<(TensorTable, Vec<u64>)> {
    descriptors.sort_by_key(|d| (d.data_offset, d.at));
    let data_offset = u64::from(h.tensor_data_offset);
    let name_bytes = descriptors.iter().map(|d| d.name.len()).sum();
    let mut builder = TableBuilder::aligned(descriptors.len(), name_bytes, alignment);
    let mut offsets = Vec::with_capacity(descriptors.len());
    let mut previous: Option<&str> = None;
    for d in &descriptors {
        if d.data_offset % alignment != 0 {
            return Err(Error::Embd(EmbdError::MisalignedTensor {
                name: d.name.to_owned(),
                offset: d.at,
                data_offset: d.data_offset,
                alignment,
            }));
        }
        if let Some(first) = previous.filter(|_| d.data_offset < builder.end()) {
            return Err(Error::Embd(EmbdError::OverlappingTensors {
                first: first.to_owned(),
                second: d.name.to_owned(),
                offset: d.at,
            }));
        }
        let bytes = crate::tensor::byte_len(d.dtype, &d.shape).ok_or_else(|| {
            Error::Layout(LayoutError::Overflow {
                what: format!("byte size of tensor `{}`", d.name),
                at: At(Some(d.at)),
            })
        })?;
        let end = d
            .data_offset
            .checked_add(bytes)
            .filter(|&end| end <= h.tensor_data_size)
            .ok_or_else(|| {
                Error::Layout(LayoutError::DataTruncated {
                    offset: data_offset,
                    expected: d.data_offset.saturating_add(bytes),
                    found: h.tensor_data_size,
                })
            })?;
        let gap_start = builder.end();
        if d.data_offset > gap_start && d.data_offset == builder.next_start() {
            let gap =
                &file[(data_offset + gap_start) as usize..(data_offset + d.data_offset) as usize];
            check_zero(gap, data_offset + gap_start)?;
        }
        builder.push(d.name, d.dtype, &d.shape, (d.data_offset, end), d.at)?;
        offsets.push(d.at);
        previous = Some(d.name);
    }
    Ok((builder.finish(data_offset, h.tensor_data_size)?, offsets))
}

/// Padding must be zero bytes.
fn check_zero(padding: &[u8], offset: u64) -> Result<()> {
    match padding.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(i) => Err(Error::Layout(LayoutError::BadPadding {
            offset: offset + i as u64,
            byte: padding[i],
            expected: 0,
        })),
    }
}
