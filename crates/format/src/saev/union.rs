//! A union of datasets read as one: several recordings of the same model,
//! layers and geometry (slices of one recording, made on several machines),
//! their images numbered one after the other in the members' order.
//!
//! A union is given as several dataset paths, or as a manifest
//! `union.json` that lists its members by relative path and metadata hash.
//! The manifest fixes the members' order, so the union's global index, and
//! so the shuffled order a seed gives, does not depend on how the members
//! were listed on a command line or in which order a cluster finished
//! them. Its members lie below the manifest's directory, so a union
//! moves as one tree; a member that climbs out of it is refused.
//!
//! The format: `{"saev_union": 1, "members": [{"path": "<HASH>", "hash":
//! "<HASH>", "n_imgs": N}, ...]}`.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::images::{Images, VisionInfo};
use super::read::{Dataset, Example, LayerChoice, Patches, View};
use super::{Metadata, open};
use crate::io::checksum::hex;
use crate::io::source::{self, JsonCaps};
use crate::{Error, Result, SaevError};

/// The manifest's file name.
pub const UNION_FILE: &str = "union.json";
/// The manifest's version key and value.
const VERSION_KEY: &str = "saev_union";
const VERSION: u64 = 1;

/// Datasets read as one, in order: image `i` of the union is image `i -
/// start(m)` of member `m`. A single dataset is a union of one.
#[derive(Debug, Clone)]
pub struct Union {
    members: Vec<Arc<Dataset>>,
    /// The union's index of each member's first image, and the total last.
    starts: Vec<u64>,
    /// The manifest the union was read from, if any.
    manifest: Option<PathBuf>,
}

impl From<Arc<Dataset>> for Union {
    fn from(dataset: Arc<Dataset>) -> Union {
        let n = dataset.metadata().n_imgs;
        Union {
            members: vec![dataset],
            starts: vec![0, n],
            manifest: None,
        }
    }
}

impl From<Dataset> for Union {
    fn from(dataset: Dataset) -> Union {
        Union::from(Arc::new(dataset))
    }
}

/// The fields of `vision.json` a member must share with the first, by
/// name and value: the model's geometry and how its input was prepared.
/// The model's directory may differ (each machine of a recording names its
/// own copy); `vit_ckpt` already names the checkpoint by its hash.
fn agreed_vision(v: &VisionInfo) -> [(&'static str, String); 6] {
    [
        ("vision.family", v.family.clone()),
        ("vision.patch_size", v.patch_size.to_string()),
        ("vision.patch_grid", format!("{:?}", v.patch_grid)),
        ("vision.input_size", format!("{:?}", v.input_size)),
        ("vision.registers", v.registers.to_string()),
        (
            "vision.preprocessor_config",
            Value::Object(v.preprocessor_config.clone()).to_string(),
        ),
    ]
}

/// The first of `expected` that differs from `found`, as the error naming
/// it for `member`.
fn disagreement(
    member: &Dataset,
    expected: &[(&'static str, String)],
    found: &[(&'static str, String)],
) -> Result<()> {
    match expected.iter().zip(found).find(|(e, f)| e.1 != f.1) {
        None => Ok(()),
        Some(((field, expected), (_, found))) => Err(Error::Saev(SaevError::UnionMismatch {
            member: member.dir().to_path_buf(),
            field,
            expected: expected.clone(),
            found: found.clone(),
        })),
    }
}

/// The fields a member must share with the first, by name and value.
fn agreed_fields(m: &Metadata) -> [(&'static str, String); 6] {
    [
        ("vit_family", m.vit_family.clone()),
        ("vit_ckpt", m.vit_ckpt.clone()),
        ("layers", format!("{:?}", m.layers)),
        ("n_patches_per_img", m.n_patches_per_img.to_string()),
        ("cls_token", m.cls_token.to_string()),
        ("d_vit", m.d_vit.to_string()),
    ]
}

impl Union {
    /// The union of `members`, in order. Each must agree with the first on
    /// the model (`vit_family`, `vit_ckpt`), the `layers`, the geometry
    /// (`n_patches_per_img`, `cls_token`) and `d_vit`
    /// ([`SaevError::UnionMismatch`] names the first field that differs);
    /// none is [`SaevError::EmptyUnion`].
    pub fn new(members: Vec<Arc<Dataset>>) -> Result<Union> {
        let first = members.first().ok_or(Error::Saev(SaevError::EmptyUnion))?;
        let expected = agreed_fields(first.metadata());
        let mut starts = Vec::with_capacity(members.len() + 1);
        let mut total = 0u64;
        for member in &members {
            disagreement(member, &expected, &agreed_fields(member.metadata()))?;
            starts.push(total);
            total += member.metadata().n_imgs;
        }
        starts.push(total);
        Ok(Union {
            members,
            starts,
            manifest: None,
        })
    }

    /// Opens `paths` as one union, in order: each a dataset (or a SAEV root
    /// holding one), or a union manifest (`union.json`, or a directory
    /// holding one and no `metadata.json`), whose members take its place.
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<Union> {
        let mut members = Vec::new();
        let mut manifest = None;
        for path in paths {
            let path = path.as_ref();
            match manifest_path(path) {
                Some(file) => {
                    members.extend(read_manifest(&file)?);
                    manifest = Some(file);
                }
                None => members.push(Arc::new(open(path)?)),
            }
        }
        let mut union = Union::new(members)?;
        if paths.len() == 1 {
            union.manifest = manifest;
        }
        Ok(union)
    }

    /// Whether `path` names a union manifest rather than a dataset: a
    /// file, or a directory holding `union.json` and no `metadata.json`.
    pub fn is_manifest(path: &Path) -> bool {
        manifest_path(path).is_some()
    }

    /// The members, in order.
    pub fn members(&self) -> &[Arc<Dataset>] {
        &self.members
    }

    /// The manifest, when the union was opened from exactly one.
    pub fn manifest(&self) -> Option<&Path> {
        self.manifest.as_deref()
    }

    /// The first member's metadata: what every member shares (model,
    /// layers, geometry, width). Its `n_imgs` is the first member's; the
    /// union's is [`Union::n_imgs`].
    pub fn metadata(&self) -> &Metadata {
        self.members[0].metadata()
    }

    /// What identifies the union's vectors: a single dataset's metadata
    /// hash, or for several members the SHA-256 of their hashes in order.
    pub fn hash(&self) -> String {
        match self.members.as_slice() {
            [only] => only.metadata().hash(),
            members => {
                let joined: Vec<String> = members.iter().map(|m| m.metadata().hash()).collect();
                hex(&Sha256::digest(
                    format!("saev_union:{}", joined.join(",")).as_bytes(),
                ))
            }
        }
    }

    /// Where the union was read from, for provenance and messages: its
    /// manifest, else its first member's directory.
    pub fn path(&self) -> &Path {
        self.manifest
            .as_deref()
            .unwrap_or_else(|| self.members[0].dir())
    }

    /// Images in the union.
    pub fn n_imgs(&self) -> u64 {
        *self.starts.last().expect("starts holds the total")
    }

    /// The member holding the union's image `img` and its index there.
    pub fn locate(&self, img: u64) -> Option<(usize, u64)> {
        if img >= self.n_imgs() {
            return None;
        }
        let member = self.starts.partition_point(|&s| s <= img) - 1;
        Some((member, img - self.starts[member]))
    }

    /// The union's index of member `member`'s first image.
    pub fn start_of(&self, member: usize) -> u64 {
        self.starts[member]
    }

    /// The images the union was recorded from, its members' lists one
    /// after the other (entry `i` is the union's image `i`), with the
    /// first member's `vision.json`; `None` when it was not recorded from
    /// images. Each member must keep its list or none do, and agree with
    /// the first on the model's geometry and input preparation
    /// ([`SaevError::UnionMismatch`] names `images.jsonl` or the
    /// `vision.*` field).
    pub fn images(&self) -> Result<Option<Images>> {
        let kept = |images: bool| if images { "kept" } else { "absent" }.to_owned();
        let mut union: Option<Images> = None;
        for (i, member) in self.members.iter().enumerate() {
            match (&mut union, member.images()?) {
                (Some(union), Some(list)) => {
                    let expected = agreed_vision(&union.vision);
                    disagreement(member, &expected, &agreed_vision(&list.vision))?;
                    union.entries.extend(list.entries);
                }
                (None, Some(list)) if i == 0 => union = Some(list),
                (None, None) => {}
                (first, list) => {
                    let expected = [("images.jsonl", kept(first.is_some()))];
                    disagreement(member, &expected, &[("", kept(list.is_some()))])?;
                }
            }
        }
        Ok(union)
    }

    /// Checks every member ([`Dataset::verify`]).
    pub fn verify(&self) -> Result<()> {
        self.members.iter().try_for_each(|m| m.verify())
    }

    /// A view over some tokens of some layers of every member, the
    /// members' examples one after the other.
    pub fn view(&self, patches: Patches, layer: LayerChoice) -> Result<UnionView<'_>> {
        let views = self
            .members
            .iter()
            .map(|m| m.view(patches, layer))
            .collect::<Result<Vec<_>>>()?;
        let per_img = views[0].per_img();
        Ok(UnionView {
            union: self,
            views,
            per_img,
        })
    }
}

/// What `acts inspect` and `acts verify` report about a union.
#[derive(Debug, Clone, serde::Serialize)]
pub struct UnionSummary {
    /// The manifest, when the union was read from one.
    pub manifest: Option<PathBuf>,
    /// [`Union::hash`].
    pub hash: String,
    /// What the members share: `vit_family`, `vit_ckpt`, `layers`,
    /// `n_patches_per_img`, `cls_token`, `d_vit`.
    pub shared: Value,
    /// Images in the union.
    pub n_imgs: u64,
    /// Activation vectors in the union.
    pub vectors: u64,
    /// Each member in order: its directory, hash, images and `data`.
    pub members: Vec<Value>,
}

impl UnionSummary {
    /// Summarises `union`.
    pub fn of(union: &Union) -> UnionSummary {
        let m = union.metadata();
        UnionSummary {
            manifest: union.manifest.clone(),
            hash: union.hash(),
            shared: json!({
                "vit_family": m.vit_family, "vit_ckpt": m.vit_ckpt, "layers": m.layers,
                "n_patches_per_img": m.n_patches_per_img, "cls_token": m.cls_token,
                "d_vit": m.d_vit,
            }),
            n_imgs: union.n_imgs(),
            vectors: union.n_imgs() * m.vectors_per_img(),
            members: union
                .members
                .iter()
                .map(|d| {
                    let m = d.metadata();
                    json!({"path": d.dir(), "hash": m.hash(), "n_imgs": m.n_imgs, "data": m.data})
                })
                .collect(),
        }
    }

    /// One line: members, images, vectors and the shared model.
    pub fn one_line(&self) -> String {
        format!(
            "SAEV union of {} datasets, {} images, {} vectors, {} {} layers {}",
            self.members.len(),
            self.n_imgs,
            self.vectors,
            self.shared["vit_family"].as_str().unwrap_or(""),
            self.shared["vit_ckpt"].as_str().unwrap_or(""),
            self.shared["layers"]
        )
    }
}

/// [`View`] over a union: example `i` is example `i` of the members' views
/// laid end to end, its `img` the union's image index.
#[derive(Debug, Clone)]
pub struct UnionView<'a> {
    union: &'a Union,
    views: Vec<View<'a>>,
    per_img: u64,
}

impl<'a> UnionView<'a> {
    /// Number of examples.
    pub fn len(&self) -> u64 {
        self.union.n_imgs() * self.per_img
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Examples per image.
    pub fn per_img(&self) -> u64 {
        self.per_img
    }

    /// Example `i`: its vector (zero-copy) and coordinates, `img` counted
    /// over the union.
    pub fn get(&self, i: u64) -> Result<Example<'a>> {
        let Some((member, local)) = self.union.locate(i / self.per_img.max(1)) else {
            return Err(Error::Saev(SaevError::InvalidCoordinate(format!(
                "index {i} is out of range for a view of {}",
                self.len()
            ))));
        };
        let mut example = self.views[member].get(local * self.per_img + i % self.per_img)?;
        example.img += self.union.start_of(member);
        Ok(example)
    }
}

/// The manifest `path` names: the file itself when it is not a dataset
/// directory, or the `union.json` of a directory without `metadata.json`.
fn manifest_path(path: &Path) -> Option<PathBuf> {
    if path.is_dir() {
        let file = path.join(UNION_FILE);
        (!path.join("metadata.json").exists() && file.is_file()).then_some(file)
    } else {
        path.is_file().then(|| path.to_path_buf())
    }
}

fn invalid(path: &Path, reason: impl Into<String>) -> Error {
    Error::Saev(SaevError::InvalidUnion {
        path: path.to_path_buf(),
        reason: reason.into(),
    })
}

/// Reads the manifest `file` and opens its members, each checked to lie
/// below the manifest's directory and to carry the hash and image count
/// listed: every field the manifest states about a member.
fn read_manifest(file: &Path) -> Result<Vec<Arc<Dataset>>> {
    let value = source::read_json(file, "SAEV union.json", JsonCaps::CONFIG)?;
    let map = value
        .as_object()
        .ok_or_else(|| invalid(file, "not a JSON object"))?;
    if let Some(extra) = map
        .keys()
        .find(|k| !["saev_union", "members"].contains(&k.as_str()))
    {
        return Err(invalid(file, format!("unknown key `{extra}`")));
    }
    if map.get(VERSION_KEY).and_then(Value::as_u64) != Some(VERSION) {
        return Err(invalid(file, format!("`{VERSION_KEY}` must be {VERSION}")));
    }
    let listed = map
        .get("members")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid(file, "`members` must be a list"))?;
    let base = file.parent().unwrap_or(Path::new("."));
    let canonical_base = std::fs::canonicalize(base).map_err(|e| Error::io(base, e))?;
    let mut members = Vec::with_capacity(listed.len());
    for (i, entry) in listed.iter().enumerate() {
        let field = |key: &str| {
            entry
                .get(key)
                .ok_or_else(|| invalid(file, format!("member {i}: missing `{key}`")))
        };
        let relative = field("path")?
            .as_str()
            .ok_or_else(|| invalid(file, format!("member {i}: `path` must be a string")))?;
        let hash = field("hash")?
            .as_str()
            .ok_or_else(|| invalid(file, format!("member {i}: `hash` must be a string")))?;
        let stated = field("n_imgs")?
            .as_u64()
            .ok_or_else(|| invalid(file, format!("member {i}: `n_imgs` must be a count")))?;
        if let Some(key) = entry.as_object().and_then(|o| {
            o.keys()
                .find(|k| !["path", "hash", "n_imgs"].contains(&k.as_str()))
        }) {
            return Err(invalid(file, format!("member {i}: unknown key `{key}`")));
        }
        let escapes = || {
            Error::Saev(SaevError::UnionPathEscapes {
                manifest: file.to_path_buf(),
                member: relative.to_owned(),
            })
        };
        let below = Path::new(relative)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if relative.is_empty() || !below {
            return Err(escapes());
        }
        let dir = base.join(relative);
        let Ok(canonical) = std::fs::canonicalize(&dir) else {
            return Err(Error::Saev(SaevError::UnionMemberMissing {
                manifest: file.to_path_buf(),
                member: dir,
            }));
        };
        if !canonical.starts_with(&canonical_base) || canonical == canonical_base {
            return Err(escapes());
        }
        if !dir.join("metadata.json").is_file() {
            return Err(Error::Saev(SaevError::UnionMemberMissing {
                manifest: file.to_path_buf(),
                member: dir,
            }));
        }
        let dataset = open(&dir)?;
        let found = dataset.metadata().hash();
        if found != hash {
            return Err(Error::Saev(SaevError::UnionHashMismatch {
                manifest: file.to_path_buf(),
                member: dir,
                expected: hash.to_owned(),
                found,
            }));
        }
        let found = dataset.metadata().n_imgs;
        if found != stated {
            return Err(Error::Saev(SaevError::UnionCountMismatch {
                manifest: file.to_path_buf(),
                member: dir,
                stated,
                found,
            }));
        }
        members.push(Arc::new(dataset));
    }
    Ok(members)
}

/// Writes the manifest of the union of `members` (datasets or manifests, in
/// order) into the directory `out` as `out/union.json`, each member listed
/// by its path relative to `out`, which must hold them all
/// ([`SaevError::UnionPathEscapes`] otherwise). The members are opened and
/// checked to agree first, and the written manifest is read back; returns
/// its path. The file is written beside and renamed into place, so a
/// reader sees the old manifest or the new one.
pub fn write_union<P: AsRef<Path>>(out: &Path, members: &[P]) -> Result<PathBuf> {
    let union = Union::open(members)?;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let file = out.join(UNION_FILE);
    let base = std::fs::canonicalize(out).map_err(|e| Error::io(out, e))?;
    let mut listed = Vec::with_capacity(union.members().len());
    for member in union.members() {
        let dir = std::fs::canonicalize(member.dir()).map_err(|e| Error::io(member.dir(), e))?;
        let relative = match dir.strip_prefix(&base) {
            Ok(relative) if !relative.as_os_str().is_empty() => relative,
            _ => {
                return Err(Error::Saev(SaevError::UnionPathEscapes {
                    manifest: file.clone(),
                    member: member.dir().display().to_string(),
                }));
            }
        };
        let relative = relative
            .to_str()
            .ok_or_else(|| invalid(&file, format!("{}: the path is not UTF-8", dir.display())))?;
        listed.push(json!({
            "path": relative,
            "hash": member.metadata().hash(),
            "n_imgs": member.metadata().n_imgs,
        }));
    }
    let text = serde_json::to_string_pretty(&json!({VERSION_KEY: VERSION, "members": listed}))
        .expect("a manifest serializes");
    let partial = out.join(format!("{UNION_FILE}.partial"));
    std::fs::write(&partial, text + "\n").map_err(|e| Error::io(&partial, e))?;
    std::fs::rename(&partial, &file).map_err(|e| Error::io(&file, e))?;
    Union::open(&[&file])?;
    Ok(file)
}
