//! `metadata.json`: the ten v1 keys, their validation, the content hash, and
//! the shard arithmetic they imply.

mod pyjson;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::io::checksum::hex;
use crate::io::json;
use crate::{Error, Result};
use crate::{LayoutError, SaevError};
pub use pyjson::{Layout, dumps, float_repr};

/// The v1 keys, in the spec's table order (the order `metadata.json` is written in).
pub const KEYS: [&str; 10] = [
    "vit_family",
    "vit_ckpt",
    "layers",
    "n_patches_per_img",
    "cls_token",
    "d_vit",
    "seed",
    "n_imgs",
    "max_patches_per_shard",
    "data",
];

/// A dataset's metadata (protocol v1).
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    /// `clip`, `siglip`, `dinov2`, ...
    pub vit_family: String,
    /// Model identifier.
    pub vit_ckpt: String,
    /// Residual-block indices recorded (may be negative: -2 = second to last).
    pub layers: Vec<i64>,
    /// Image patches per image (CLS excluded).
    pub n_patches_per_img: u64,
    /// Whether token 0 is CLS.
    pub cls_token: bool,
    /// Activation width D.
    pub d_vit: u64,
    /// Seed used during the dump.
    pub seed: i64,
    /// Images in the dataset.
    pub n_imgs: u64,
    /// Budget of activation vectors per shard.
    pub max_patches_per_shard: u64,
    /// Dataset description: a string or a JSON object.
    pub data: Value,
}

/// The largest `metadata.json` read (1 MiB; real ones are a few hundred bytes).
pub const MAX_BYTES: u64 = 1 << 20;
/// The most JSON values `metadata.json` may hold (its `data` may be a tree).
pub const MAX_VALUES: u64 = 1 << 16;

fn invalid(reason: String) -> Error {
    Error::Saev(SaevError::InvalidMetadata { reason })
}

impl Metadata {
    /// Parses and validates `metadata.json` text: exactly the ten keys, each
    /// of its type, and a shard size of at least one image.
    pub fn parse(json: &str) -> Result<Metadata> {
        json::check(json.as_bytes(), "SAEV metadata.json", MAX_VALUES)?;
        let value: Value = serde_json::from_str(json).map_err(|e| {
            Error::Layout(LayoutError::InvalidHeader {
                format: "SAEV metadata.json",
                offset: json::error_offset(json.as_bytes(), &e),
                reason: e.to_string(),
            })
        })?;
        Metadata::from_value(&value)
    }

    /// Validates a parsed JSON object.
    pub fn from_value(value: &Value) -> Result<Metadata> {
        let map = value
            .as_object()
            .ok_or_else(|| invalid("not a JSON object".into()))?;
        if let Some(extra) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(invalid(format!(
                "unknown key `{extra}` (protocol v1 has exactly {KEYS:?})"
            )));
        }
        let get = |key: &str| {
            map.get(key)
                .ok_or_else(|| invalid(format!("missing key `{key}`")))
        };
        let string = |key: &str| {
            get(key)?
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| invalid(format!("`{key}` must be a string")))
        };
        let unsigned = |key: &str| {
            get(key)?
                .as_u64()
                .ok_or_else(|| invalid(format!("`{key}` must be a non-negative integer")))
        };
        let layers = get("layers")?
            .as_array()
            .ok_or_else(|| invalid("`layers` must be a list of integers".into()))?
            .iter()
            .map(|l| {
                l.as_i64()
                    .ok_or_else(|| invalid("`layers` must be a list of integers".into()))
            })
            .collect::<Result<Vec<_>>>()?;
        let data = get("data")?.clone();
        if !(data.is_string() || data.is_object()) {
            return Err(invalid("`data` must be a string or an object".into()));
        }
        let metadata = Metadata {
            vit_family: string("vit_family")?,
            vit_ckpt: string("vit_ckpt")?,
            layers,
            n_patches_per_img: unsigned("n_patches_per_img")?,
            cls_token: get("cls_token")?
                .as_bool()
                .ok_or_else(|| invalid("`cls_token` must be a boolean".into()))?,
            d_vit: unsigned("d_vit")?,
            seed: get("seed")?
                .as_i64()
                .ok_or_else(|| invalid("`seed` must be an integer".into()))?,
            n_imgs: unsigned("n_imgs")?,
            max_patches_per_shard: unsigned("max_patches_per_shard")?,
            data,
        };
        metadata.validate()?;
        Ok(metadata)
    }

    /// Checks the values: layers non-empty and distinct, at least one token
    /// per image, D ≥ 1, and at least one image per shard.
    pub fn validate(&self) -> Result<()> {
        if self.layers.is_empty() {
            return Err(invalid("`layers` is empty".into()));
        }
        let mut sorted = self.layers.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(invalid("`layers` repeats a layer".into()));
        }
        if self.tokens_per_img() == 0 {
            return Err(invalid(
                "no tokens per image (n_patches_per_img 0 and no CLS)".into(),
            ));
        }
        if self.d_vit == 0 {
            return Err(invalid("`d_vit` must be at least 1".into()));
        }
        if self.imgs_per_shard() == 0 {
            return Err(invalid(format!(
                "max_patches_per_shard {} is below one image's {} vectors (layers × tokens)",
                self.max_patches_per_shard,
                self.vectors_per_img()
            )));
        }
        self.vectors_per_img()
            .checked_mul(self.d_vit)
            .and_then(|v| v.checked_mul(4))
            .and_then(|v| v.checked_mul(self.imgs_per_shard()))
            .ok_or_else(|| invalid("shard size overflows 64 bits".into()))?;
        Ok(())
    }

    /// L.
    pub fn n_layers(&self) -> u64 {
        self.layers.len() as u64
    }

    /// T = P + CLS.
    pub fn tokens_per_img(&self) -> u64 {
        self.n_patches_per_img
            .saturating_add(u64::from(self.cls_token))
    }

    /// L × T.
    pub fn vectors_per_img(&self) -> u64 {
        self.n_layers().saturating_mul(self.tokens_per_img())
    }

    /// S = max_patches_per_shard // (L × T).
    pub fn imgs_per_shard(&self) -> u64 {
        self.max_patches_per_shard / self.vectors_per_img().max(1)
    }

    /// ceil(n_imgs / S) (no extra empty shard).
    pub fn n_shards(&self) -> u64 {
        self.n_imgs.div_ceil(self.imgs_per_shard().max(1))
    }

    /// Bytes of one image: L × T × D × 4.
    pub fn img_bytes(&self) -> u64 {
        self.vectors_per_img() * self.d_vit * 4
    }

    /// Bytes of a full shard: S × L × T × D × 4.
    pub fn shard_bytes(&self) -> u64 {
        self.imgs_per_shard() * self.img_bytes()
    }

    /// The metadata as a JSON object in the spec's key order.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("vit_family".into(), self.vit_family.clone().into());
        map.insert("vit_ckpt".into(), self.vit_ckpt.clone().into());
        map.insert("layers".into(), self.layers.clone().into());
        map.insert("n_patches_per_img".into(), self.n_patches_per_img.into());
        map.insert("cls_token".into(), self.cls_token.into());
        map.insert("d_vit".into(), self.d_vit.into());
        map.insert("seed".into(), self.seed.into());
        map.insert("n_imgs".into(), self.n_imgs.into());
        map.insert(
            "max_patches_per_shard".into(),
            self.max_patches_per_shard.into(),
        );
        map.insert("data".into(), self.data.clone());
        Value::Object(map)
    }

    /// `metadata.json` as the reference writes it (`json.dump(.., indent=4)`,
    /// no trailing newline).
    pub fn to_json(&self) -> String {
        dumps(&self.to_value(), Layout::Indented4)
    }

    /// The dataset's directory name: hex SHA-256 of `json.dumps(metadata, sort_keys=True)`.
    pub fn hash(&self) -> String {
        hex(&Sha256::digest(
            dumps(&self.to_value(), Layout::SortedCompact).as_bytes(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLDEN: &str = r#"{"vit_family":"clip","vit_ckpt":"ViT-B-32/openai","layers":[-2,-1],"n_patches_per_img":49,"cls_token":true,"d_vit":768,"seed":42,"n_imgs":10,"n_patches_per_shard":2400000,"data":"Imagenet(name='ILSVRC/imagenet-1k', split='train')"}"#;

    #[test]
    fn design_golden_hash() {
        // The protocol's golden vector uses the key `n_patches_per_shard`; hash it as given.
        let value: Value = serde_json::from_str(GOLDEN).unwrap();
        let digest = hex(&Sha256::digest(
            dumps(&value, Layout::SortedCompact).as_bytes(),
        ));
        assert_eq!(
            digest,
            "d5578b280a35c83bdc0fa66d8fa1fa292d8c8dddaff7f2dc88caa32ea3ea4fa7"
        );
        // ... which is not a valid v1 file: the key is `max_patches_per_shard`.
        assert!(matches!(
            Metadata::parse(GOLDEN),
            Err(Error::Saev(SaevError::InvalidMetadata { ref reason })) if reason.contains("max_patches_per_shard")
        ));
        // With the v1 key, Python's json.dumps + hashlib give (checked with python3):
        let v1 = Metadata::parse(&GOLDEN.replace("n_patches_per_shard", "max_patches_per_shard"))
            .unwrap();
        assert_eq!(
            v1.hash(),
            "1601e9fed70eb121d80d22d55914426af43a7839c3df56786ad4260b3a557154"
        );
    }

    #[test]
    fn shard_arithmetic() {
        let m = Metadata::parse(&GOLDEN.replace("n_patches_per_shard", "max_patches_per_shard"))
            .unwrap();
        assert_eq!(m.tokens_per_img(), 50);
        assert_eq!(m.imgs_per_shard(), 2_400_000 / 100);
        assert_eq!(m.n_shards(), 1);
        assert_eq!(Metadata::parse(&m.to_json()).unwrap(), m);
    }
}
