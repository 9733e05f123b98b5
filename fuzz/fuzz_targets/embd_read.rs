//! Fuzz the EMBD reader: any input is Ok or Err, never a panic; an accepted
//! file can be verified, checked as a BERT model and summarised. The header
//! CRC is recomputed first so that mutations reach the sections behind it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_format::io::checksum::crc32;
use modelbin_format::embd::Embd;
use modelbin_format::model::BertConfig;
use modelbin_format::embd::EmbdSummary;

fuzz_target!(|data: &[u8]| {
    let mut data = data.to_vec();
    if data.len() >= 64 {
        let crc = crc32(&data[..56]);
        data[56..60].copy_from_slice(&crc.to_le_bytes());
    }
    if let Ok(file) = Embd::from_buffer(data.as_slice()) {
        let _ = file.verify();
        // The configuration the metadata claims is checked against the
        // tensors present without building anything from the claim.
        let _ = BertConfig::validate(&file);
        let summary = EmbdSummary::of(&file);
        assert_eq!(summary.token_count, file.tokens().count());
    }
});
