//! A recorded dataset cut into slices, each a dataset of its own with its
//! share of the vectors and side files (token ids and vocabulary, image
//! list and `vision.json`): what a recording in several processes makes,
//! whose union must read as the dataset.

use std::path::{Path, PathBuf};

use modelbin_format::saev::{self, Writer};

/// The slices of the dataset `whole` that start at each of `cuts` (the
/// first cut 0), written under `root`, each naming its images in `data`.
pub fn split(whole: &Path, cuts: &[u64], root: &Path) -> Vec<PathBuf> {
    let dataset = saev::open(whole).unwrap();
    let m = dataset.metadata();
    let images = dataset.images().unwrap();
    let vocabulary = dataset.vocabulary().unwrap();
    let vocabulary: Option<Vec<&str>> = vocabulary
        .as_ref()
        .map(|v| v.iter().map(String::as_str).collect());
    let ends = cuts.iter().skip(1).copied().chain([m.n_imgs]);
    cuts.iter()
        .zip(ends)
        .map(|(&from, to)| {
            let mut metadata = m.clone();
            metadata.n_imgs = to - from;
            metadata.data = format!("images {from}..{to}").into();
            let mut writer = Writer::create(root, metadata).unwrap();
            for img in from..to {
                let mut values = Vec::new();
                for &layer in &m.layers {
                    for token in 0..m.tokens_per_img() {
                        values.extend(dataset.vector(img, layer, token).unwrap());
                    }
                }
                writer.push(&values).unwrap();
            }
            if let Some(ids) = dataset.token_ids() {
                let window = m.n_patches_per_img;
                let ids = ids.span(from * window, ((to - from) * window) as usize);
                writer.write_tokens(&ids, vocabulary.as_deref()).unwrap();
            }
            if let Some(images) = &images {
                let entries = &images.entries[from as usize..to as usize];
                writer.write_images(entries, &images.vision).unwrap();
            }
            writer.finish().unwrap()
        })
        .collect()
}

/// The union of [`split`]'s slices, given the two ways a command takes
/// it: the manifest `acts union` writes under `root`, and the slices
/// listed.
pub fn union_of_slices(whole: &Path, cuts: &[u64], root: &Path) -> [Vec<PathBuf>; 2] {
    let slices = split(whole, cuts, root);
    let mut args = vec!["acts", "union"];
    args.extend(slices.iter().map(|p| super::s(p)));
    args.extend(["-o", super::s(root)]);
    super::ok(&args, "");
    [vec![root.join(saev::UNION_FILE)], slices]
}

/// Runs `sae features SAE DATA... --layer -1 more` over `whole` and over
/// each of `unions` (each given as its list of paths), as text and as
/// `--json` with `--html`, and asserts the same lines and the same page;
/// returns the `--json` lines.
pub fn assert_same_features(
    sae: &Path,
    whole: &Path,
    unions: &[Vec<PathBuf>],
    more: &[&str],
) -> String {
    let pages = tempfile::tempdir().unwrap();
    let run = |data: &[PathBuf], page: &Path| {
        let mut args = vec!["sae", "features", super::s(sae)];
        args.extend(data.iter().map(|p| super::s(p)));
        args.extend(["--layer", "-1"]);
        args.extend(more);
        let text = super::ok(&args, "");
        args.extend(["--json", "--html", super::s(page)]);
        let json = super::ok(&args, "");
        (text, json, std::fs::read_to_string(page).unwrap())
    };
    let expected = run(&[whole.to_path_buf()], &pages.path().join("whole.html"));
    for (i, union) in unions.iter().enumerate() {
        let found = run(union, &pages.path().join(format!("{i}.html")));
        assert!(
            found.0 == expected.0,
            "{union:?}: text\n{}\n{}",
            found.0,
            expected.0
        );
        assert!(
            found.1 == expected.1,
            "{union:?}: --json\n{}\n{}",
            found.1,
            expected.1
        );
        assert!(found.2 == expected.2, "{union:?}: the page differs");
    }
    expected.1
}
