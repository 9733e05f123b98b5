//! EMBD: the layout the decisions fix, round trips of every dtype and option, the real all-MiniLM-L6-v2, and int8 recasting.

mod common;

use common::OwnedTensor;
use common::embd::*;
use modelbin_format::convert::{HfOptions, from_hf_dir};
use modelbin_format::embd::{self, Vocabulary, WriteOptions};
use modelbin_format::io::checksum::{crc32, fnv1a32};
use modelbin_format::model::BertConfig;
use modelbin_format::{DType, TensorStore};

#[test]
fn layout_follows_the_decisions() {
    let b = tiny_file();
    assert_eq!(&b[..4], b"EMBD");
    assert_eq!(u16::from_le_bytes([b[4], b[5]]), 1);
    assert_eq!(
        u32_at(&b, 8),
        0b111,
        "VOCAB_EMBEDDED | TENSORS_ALIGNED | CHECKSUM_ENABLED"
    );
    assert_eq!(u32_at(&b, 12), 64, "metadata right after the header");
    let metadata_size = u32_at(&b, 16);
    assert_eq!(
        u32_at(&b, 64 + 4) + 8,
        metadata_size,
        "metadata_size = 8 + total_size"
    );
    let vocab_offset = u32_at(&b, 20) as usize;
    assert_eq!(vocab_offset, 64 + metadata_size as usize);
    let total_size = u32_at(&b, vocab_offset + 4);
    assert_eq!(
        u32_at(&b, vocab_offset + 8),
        12 + total_size,
        "special block after the entries"
    );
    let special = vocab_offset + 12 + total_size as usize;
    let ids: Vec<u32> = (0..5).map(|i| u32_at(&b, special + 4 * i)).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4]);
    let index = u32_at(&b, 28) as usize;
    assert_eq!(index, special + 20);
    let count = u32_at(&b, 32) as usize;
    assert_eq!(count, tiny_tensors().len());
    let data_offset = u32_at(&b, 36) as usize;
    assert_eq!(data_offset % 64, 0);
    let data_size = u64_at(&b, 40) as usize;
    assert_eq!(u64_at(&b, 48) as usize, data_offset + data_size + 16);
    assert_eq!(u64_at(&b, 48) as usize, b.len());
    assert_eq!(u32_at(&b, 56), crc32(&b[..56]));
    let footer = b.len() - 16;
    assert_eq!(u32_at(&b, footer), crc32(&b[data_offset..footer]));
    assert_eq!(u32_at(&b, footer + 4), crc32(&b[..footer]));
    assert_eq!(&b[footer + 8..footer + 12], b"DBME");
    // Descriptors: FNV-1a of the name, data offsets multiples of 64.
    let names_start = index + 32 * count;
    let mut name_at = names_start;
    for i in 0..count {
        let d = index + 32 * i;
        let len = u16::from_le_bytes([b[d + 6], b[d + 7]]) as usize;
        assert_eq!(u32_at(&b, d), fnv1a32(&b[name_at..name_at + len]));
        assert_eq!(u64_at(&b, d + 24) % 64, 0);
        name_at += len;
    }
    assert!(b[name_at..data_offset].iter().all(|&x| x == 0));
}

#[test]
fn round_trips_tensors_metadata_and_vocabulary() {
    let b = tiny_file();
    let file = open(&b).unwrap();
    file.verify().unwrap();
    assert_eq!(file.metadata(), Some(&tiny_metadata()));
    assert_eq!(file.tokens().collect::<Vec<_>>(), TOKENS);
    assert_eq!(file.special_tokens(), Some(SPECIALS));
    let tensors = tiny_tensors();
    assert_eq!(file.len(), tensors.len());
    for (ours, want) in file.tensors().zip(&tensors) {
        assert_eq!(ours, want.view());
    }
    let config = BertConfig::validate(&file).unwrap();
    assert_eq!(
        (config.hidden_size, config.num_heads, config.type_vocab_size),
        (4, 2, 2)
    );
}

#[test]
fn all_nine_dtypes_and_every_layout_option_round_trip() {
    // Every EMBD dtype code (the code table itself is pinned in dtype.rs).
    let dtypes: Vec<DType> = (0..9).map(|c| DType::from_embd_code(c).unwrap()).collect();
    let tensors: Vec<OwnedTensor> = dtypes
        .iter()
        .enumerate()
        .map(|(i, &dtype)| {
            let shape = [vec![3], vec![2, 5], vec![1, 2, 3], vec![2, 1, 1, 3]][i % 4].clone();
            let n: usize = shape.iter().product::<usize>() * dtype.size();
            OwnedTensor {
                name: format!("t{i}.{dtype}"),
                dtype,
                shape,
                data: (0..n).map(|j| (j * 7 + i) as u8).collect(),
            }
        })
        .collect();
    let vocab = Vocabulary {
        tokens: &TOKENS,
        specials: SPECIALS,
    };
    for (checksums, aligned, with_vocab) in [
        (true, true, true),
        (false, true, true),
        (true, false, true),
        (false, false, false),
    ] {
        let options = WriteOptions { checksums, aligned };
        let mut metadata = tiny_metadata();
        metadata.insert("extra key".into(), "ünïcode value".into());
        let b = write(&metadata, with_vocab.then_some(&vocab), &tensors, options);
        let file = open(&b).unwrap();
        file.verify().unwrap();
        assert_eq!(file.header().has(embd::flags::CHECKSUM_ENABLED), checksums);
        assert_eq!(file.token_count(), if with_vocab { 8 } else { 0 });
        assert_eq!(file.metadata(), Some(&metadata));
        for (ours, want) in file.tensors().zip(&tensors) {
            assert_eq!(ours, want.view());
        }
    }
}

#[test]
fn the_real_minilm_converts_losslessly_and_opens_cheaply() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("minilm.embd");
    let model_dir = common::minilm_safetensors().parent().unwrap().to_owned();
    let (count, size) =
        from_hf_dir(&model_dir, &out, HfOptions::default(), &mut |_, _| {}).unwrap();
    assert_eq!(count, 103, "104 tensors minus embeddings.position_ids");
    let start = std::time::Instant::now();
    let file = embd::open(&out).unwrap();
    let opened = start.elapsed();
    println!("open + validate of a {size}-byte file: {opened:?}");
    file.verify().unwrap();
    let config = BertConfig::validate(&file).unwrap();
    assert_eq!(
        (config.num_layers, config.hidden_size, config.max_seq_length),
        (6, 384, 256)
    );
    assert_eq!(file.token_count(), 30522);
    assert_eq!(file.token(101), Some("[CLS]"));
    assert_eq!(file.metadata_value("pooling"), Some("mean"));
    assert_eq!(file.metadata_value("normalize"), Some("true"));
    let source = modelbin_format::safetensors::open(common::minilm_safetensors()).unwrap();
    for tensor in source
        .tensors()
        .filter(|t| t.name() != "embeddings.position_ids")
    {
        assert_eq!(file.tensor(tensor.name()).unwrap(), tensor);
    }
    let vocab = std::fs::read_to_string(model_dir.join("vocab.txt")).unwrap();
    assert!(vocab.lines().eq(file.tokens()));
}

#[test]
fn int8_recast_quantizes_the_linear_weights_and_word_embeddings_and_round_trips_within_half_a_step()
{
    use modelbin_format::embd::int8::{
        WORD_EMBEDDINGS, block_for, dequantize, is_quantized, scale_name,
    };
    let float_bytes = tiny_file();
    let float = open(&float_bytes).unwrap();
    let int8_bytes = recast_bytes(&float_bytes, DType::I8);
    let int8 = open(&int8_bytes).unwrap();
    int8.verify().unwrap();
    BertConfig::validate(&int8).unwrap();
    let mut quantized = 0;
    for tensor in float.tensors() {
        let stored = int8.tensor(tensor.name()).unwrap();
        if !is_quantized(tensor.name()) {
            assert_eq!(stored, tensor, "{} is kept as it is", tensor.name());
            continue;
        }
        quantized += 1;
        assert_eq!(stored.dtype(), DType::I8);
        let scales = int8.tensor(&scale_name(tensor.name())).unwrap();
        let (n, k) = (tensor.shape()[0], tensor.shape()[1]);
        let block = block_for(tensor.name(), k);
        let blocks = k.div_ceil(block);
        // The word embeddings: one scale per row, `[n]`; the linear
        // weights: `[n, blocks]`.
        let shape = if tensor.name() == WORD_EMBEDDINGS {
            vec![n]
        } else {
            vec![n, blocks]
        };
        assert_eq!((scales.dtype(), scales.shape()), (DType::F32, &shape[..]));
        let scales = scales.to_f32().unwrap();
        let back = dequantize(bytemuck::cast_slice(stored.data()), &scales, k, block);
        let want = tensor.to_f32().unwrap();
        for (i, (a, b)) in back.iter().zip(want.iter()).enumerate() {
            let scale = scales[i / k * blocks + i % k / block];
            assert!(
                (a - b).abs() <= scale / 2.0 + 1e-6,
                "{} [{i}]",
                tensor.name()
            );
        }
    }
    assert_eq!(quantized, 7);
    assert_eq!(int8.tensors().count(), float.tensors().count() + 7);
    // Back to F32: the dequantized values, no scale tensors.
    let again = recast_bytes(&int8_bytes, DType::F32);
    let again = open(&again).unwrap();
    assert_eq!(again.tensors().count(), float.tensors().count());
    for tensor in again.tensors() {
        assert_eq!(tensor.dtype(), DType::F32, "{}", tensor.name());
        if is_quantized(tensor.name()) {
            let scales = int8
                .tensor(&scale_name(tensor.name()))
                .unwrap()
                .to_f32()
                .unwrap();
            let q = int8.tensor(tensor.name()).unwrap();
            let k = q.shape()[1];
            let block = block_for(tensor.name(), k);
            let want = dequantize(bytemuck::cast_slice(q.data()), &scales, k, block);
            assert_eq!(tensor.to_f32().unwrap().as_ref(), want.as_slice());
        }
    }
}

#[test]
fn a_weight_that_is_not_finite_is_not_quantized() {
    for bad in [f32::INFINITY, f32::NAN] {
        refuses_to_quantize(bad);
    }
}
