//! `sae features` and `acts verify` on a dataset recorded from images: a
//! dataset written with the image side files over real PNG files, and a
//! ReLU autoencoder whose latent j is the activation's dimension j, so
//! every patch's code is known; the top images, their patch grids, the
//! page's pictures (each once) and `--json` are checked against codes
//! computed here.

mod common;

use std::path::{Path, PathBuf};

use common::{ok, run, s};
use modelbin_format::saev::{ImageEntry, Metadata, VisionInfo, Writer};
use modelbin_infer::sae::{Activation, Sae, saelens};
use serde_json::{Value, json};

const N_IMGS: usize = 5;
/// A 2×2 grid of 16-pixel patches over 32×32 images.
const GRID: usize = 2;
const PATCH: u32 = 16;
const D: usize = 4;

/// The activation of patch `patch` of image `img` on dimension `patch`
/// (every other dimension is 0): large on the patch holding the image's
/// bright square, small elsewhere.
fn act(img: usize, patch: usize) -> f32 {
    if patch == img % 4 {
        2.0 + img as f32
    } else {
        0.1 * (patch + 1) as f32
    }
}

/// Image `img`'s CLS vector: `0.05 × img` on dimension 3.
fn cls(img: usize) -> f32 {
    0.05 * img as f32
}

/// A 32×32 PNG, dark but for a bright square filling patch `img % 4`.
fn png(img: usize) -> Vec<u8> {
    let bright = img % 4;
    let (row, col) = ((bright / GRID) as u32, (bright % GRID) as u32);
    let picture = image::RgbImage::from_fn(32, 32, |x, y| {
        if x / PATCH == col && y / PATCH == row {
            image::Rgb([250, 240, 40 * img as u8])
        } else {
            image::Rgb([20, 30, 60])
        }
    });
    let mut bytes = Vec::new();
    picture
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    bytes
}

/// The dataset (layer -1, CLS and four patches of D values) and an
/// autoencoder of D + 1 latents: latent j < D is ReLU of dimension j,
/// latent D never fires.
fn setup(root: &Path) -> (PathBuf, PathBuf) {
    setup_named(root, "picture")
}

/// [`setup`] with image files named `{stem}{img}.png`.
fn setup_named(root: &Path, stem: &str) -> (PathBuf, PathBuf) {
    let entries: Vec<ImageEntry> = (0..N_IMGS)
        .map(|img| {
            let path = root.join(format!("{stem}{img}.png"));
            let bytes = png(img);
            std::fs::write(&path, &bytes).unwrap();
            ImageEntry::of(&path, &bytes)
        })
        .collect();
    let metadata = Metadata {
        vit_family: "dinov2".into(),
        vit_ckpt: "tiny-dinov2".into(),
        layers: vec![-1],
        n_patches_per_img: (GRID * GRID) as u64,
        cls_token: true,
        d_vit: D as u64,
        seed: 0,
        n_imgs: N_IMGS as u64,
        max_patches_per_shard: 15,
        data: "five pictures".into(),
    };
    let mut writer = Writer::create(root.join("acts"), metadata).unwrap();
    for img in 0..N_IMGS {
        let mut values = vec![0.0f32; (1 + GRID * GRID) * D];
        values[3] = cls(img);
        for patch in 0..GRID * GRID {
            values[(1 + patch) * D + patch] = act(img, patch);
        }
        writer.push(&values).unwrap();
    }
    let vision = VisionInfo {
        family: "dinov2".into(),
        model: "tiny-dinov2".into(),
        patch_size: u64::from(PATCH),
        patch_grid: [GRID as u64; 2],
        input_size: [32, 32],
        registers: 0,
        preprocessor_config:
            json!({"do_resize": true, "size": {"height": 32, "width": 32}, "do_center_crop": false})
                .as_object()
                .unwrap()
                .clone(),
    };
    writer.write_images(&entries, &vision).unwrap();
    let dataset = writer.finish().unwrap();
    let d_sae = D + 1;
    let mut w_enc = vec![0.0f32; d_sae * D];
    for j in 0..D {
        w_enc[j * D + j] = 1.0;
    }
    let mut b_enc = vec![0.0f32; d_sae];
    b_enc[D] = -1.0;
    let sae = Sae {
        d_in: D,
        d_sae,
        activation: Activation::Relu,
        w_dec: w_enc.clone(),
        w_enc,
        b_enc,
        b_dec: vec![0.0; D],
        io: modelbin_infer::sae::Io::default(),
    };
    let sae_dir = root.join("sae");
    saelens::save(&sae_dir, &sae, json!({"layer": -1})).unwrap();
    (dataset, sae_dir)
}

/// The autoencoder's code of latent `j` on a vector, computed here:
/// ReLU(W_enc x + b_enc) with W_enc the identity on the first D latents.
fn code(j: usize, x: &[f32; D]) -> f32 {
    if j >= D {
        return 0.0;
    }
    let pre: f32 = (0..D).map(|i| if i == j { x[i] } else { 0.0 }).sum();
    pre.max(0.0)
}

/// Patch `patch` of image `img` as a vector.
fn patch_vector(img: usize, patch: usize) -> [f32; D] {
    let mut x = [0.0; D];
    x[patch] = act(img, patch);
    x
}

fn latents(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn by_latent(found: &[Value], latent: usize) -> &Value {
    found.iter().find(|f| f["latent"] == latent).unwrap()
}

#[test]
fn top_images_carry_each_patch_activation_and_the_page_each_picture_once() {
    let root = tempfile::tempdir().unwrap();
    let (dataset, sae) = setup(root.path());
    let page = root.path().join("page.html");
    let args = [
        "sae",
        "features",
        s(&sae),
        s(&dataset),
        "--layer",
        "-1",
        "--top",
        "3",
        "--json",
        "--latents",
        "5",
        "--html",
        s(&page),
    ];
    let found = latents(&ok(&args, ""));
    assert_eq!(found.len(), D + 1);
    for j in 0..D {
        let feature = by_latent(&found, j);
        // Strongest images by their strongest patch, each once; ties to
        // the earlier image.
        let mut strongest: Vec<(f32, usize)> = (0..N_IMGS)
            .map(|img| {
                let best = (0..GRID * GRID)
                    .map(|p| code(j, &patch_vector(img, p)))
                    .fold(0.0, f32::max);
                (best, img)
            })
            .filter(|b| b.0 > 0.0)
            .collect();
        strongest.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let top = feature["top"].as_array().unwrap();
        let images: Vec<u64> = top.iter().map(|c| c["img"].as_u64().unwrap()).collect();
        let expected: Vec<u64> = strongest.iter().take(3).map(|b| b.1 as u64).collect();
        assert_eq!(images, expected, "latent {j}");
        for context in top {
            let img = context["img"].as_u64().unwrap() as usize;
            let image = &context["image"];
            assert_eq!(image["grid"], json!([GRID, GRID]));
            assert_eq!(
                image["path"],
                s(&root.path().join(format!("picture{img}.png")))
            );
            let grid: Vec<f32> = (0..GRID * GRID)
                .map(|p| code(j, &patch_vector(img, p)))
                .collect();
            close(&image["acts"], &grid);
            close(
                &context["value"],
                &[grid.iter().copied().fold(0.0, f32::max)],
            );
            // The input shown is the strongest patch (token = patch + CLS).
            assert_eq!(context["token"], json!(1 + j));
            assert!(image.get("cls").is_none(), "an image view holds no CLS");
        }
        // Each image sampled from an interval fires on a patch in it.
        for q in feature["quantiles"].as_array().unwrap() {
            for sample in q["samples"].as_array().unwrap() {
                let value = sample["value"].as_f64().unwrap();
                assert!(value > q["low"].as_f64().unwrap() && value <= q["high"].as_f64().unwrap());
                assert_eq!(
                    sample["image"]["acts"].as_array().unwrap().len(),
                    GRID * GRID
                );
            }
        }
    }
    let dead = by_latent(&found, D);
    assert_eq!(
        (dead["band"].as_str(), dead["top"].as_array().map(Vec::len)),
        (Some("dead"), Some(0))
    );

    // The page: each picture shown once, however many latents show it.
    let html = std::fs::read_to_string(&page).unwrap();
    let data = page_data(&html);
    let list = data["images"]["list"].as_array().unwrap();
    let shown: Vec<u64> = list.iter().map(|i| i[0].as_u64().unwrap()).collect();
    assert_eq!(shown, (0..N_IMGS as u64).collect::<Vec<_>>());
    for image in list {
        let uri = image[2].as_str().unwrap();
        assert!(uri.starts_with("data:image/jpeg;base64,"), "{image}");
        assert_eq!(html.matches(uri).count(), 1);
        assert_eq!(image[3], "");
    }
    assert_eq!(html.matches("data:image/jpeg;base64,").count(), N_IMGS);
    assert_eq!(data["images"]["grid"], json!([GRID, GRID]));
    assert_eq!(data["images"]["patch"], json!(PATCH));
    assert_eq!(data["images"]["input"], json!([32, 32]));
    println!(
        "page of {} latents over {N_IMGS} images: {} bytes",
        D + 1,
        html.len()
    );

    // A missing and a changed image: the page notes them and draws no
    // picture; `acts verify` warns and counts them, and still succeeds.
    std::fs::remove_file(root.path().join("picture1.png")).unwrap();
    std::fs::write(root.path().join("picture2.png"), png(3)).unwrap();
    ok(&args, "");
    let data = page_data(&std::fs::read_to_string(&page).unwrap());
    let list = data["images"]["list"].as_array().unwrap();
    assert_eq!(
        (list[1][2].as_str(), list[1][3].as_str()),
        (Some(""), Some("image file missing"))
    );
    assert_eq!(
        (list[2][2].as_str(), list[2][3].as_str()),
        (Some(""), Some("image file changed since the recording"))
    );
    let out = run(&["acts", "verify", s(&dataset)], "");
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("1 of 5 listed images are missing"),
        "{stderr}"
    );
    assert!(stderr.contains("1 changed"), "{stderr}");
    let verdict: Value =
        serde_json::from_str(&ok(&["acts", "verify", "--json", s(&dataset)], "")).unwrap();
    assert_eq!(verdict["valid"], true);
    assert_eq!(verdict["image_files"]["missing"], 1);
    assert_eq!(verdict["image_files"]["changed"], 1);
    assert_eq!(verdict["image_files"]["first_missing"][0][0], 1);
    assert!(
        verdict["warnings"][0]
            .as_str()
            .unwrap()
            .contains("images may live elsewhere")
    );
    let verdict: Value = serde_json::from_str(&ok(&["verify", "--json", s(&dataset)], "")).unwrap();
    assert_eq!(verdict["image_files"]["changed"], 1);
}

#[test]
fn features_over_a_union_of_slices_are_the_datasets_with_each_members_pictures() {
    let root = tempfile::tempdir().unwrap();
    let (dataset, sae) = setup(root.path());
    let slices_root = root.path().join("slices");
    let unions = common::slices::union_of_slices(&dataset, &[0, 2, 3], &slices_root);
    for patches in ["image", "cls", "all"] {
        let more = ["--patches", patches, "--top", "3"];
        common::slices::assert_same_features(&sae, &dataset, &unions, &more);
    }
    // The page (the same as the dataset's) shows every member's pictures.
    let page = root.path().join("union.html");
    let mut args = vec!["sae", "features", s(&sae), s(&slices_root)];
    args.extend(["--layer", "-1", "--html", s(&page)]);
    ok(&args, "");
    let data = page_data(&std::fs::read_to_string(&page).unwrap());
    let list = data["images"]["list"].as_array().unwrap();
    let shown: Vec<u64> = list.iter().map(|i| i[0].as_u64().unwrap()).collect();
    assert_eq!(shown, (0..N_IMGS as u64).collect::<Vec<_>>());
    assert!(
        list.iter()
            .all(|i| i[2].as_str().unwrap().starts_with("data:image/jpeg"))
    );
}

#[test]
fn cls_and_all_views_show_the_cls_activation() {
    let root = tempfile::tempdir().unwrap();
    let (dataset, sae) = setup(root.path());
    let features = |patches: &str| {
        let args = [
            "sae",
            "features",
            s(&sae),
            s(&dataset),
            "--layer",
            "-1",
            "--top",
            "2",
            "--json",
            "--latent",
            "3",
            "--patches",
            patches,
        ];
        latents(&ok(&args, "")).remove(0)
    };
    // In a `cls` view each image's input is its CLS token: no grid.
    let cls_view = features("cls");
    let top = cls_view["top"].as_array().unwrap();
    assert_eq!(
        top.iter().map(|c| c["img"].clone()).collect::<Vec<_>>(),
        [json!(4), json!(3)]
    );
    for context in top {
        let img = context["img"].as_u64().unwrap() as usize;
        assert_eq!(context["image"]["acts"], json!([]));
        close(&context["image"]["cls"], &[cls(img)]);
        assert_eq!(context["token"], 0);
    }
    // In an `all` view an image ranks by its strongest token, CLS or
    // patch; the grid holds the patches and `cls` the CLS token.
    let all = features("all");
    let first = &all["top"][0];
    assert_eq!(first["img"], 3);
    close(&first["image"]["acts"], &[0.0, 0.0, 0.0, act(3, 3)]);
    close(&first["image"]["cls"], &[cls(3)]);
}

#[test]
fn every_interval_with_inputs_shows_images_from_it() {
    // One latent reading every dimension: it fires on every patch, on
    // each image's bright patch strongly and on its three others weakly,
    // so the lowest interval holds 15 patches, none an image's strongest.
    let root = tempfile::tempdir().unwrap();
    let (dataset, _) = setup(root.path());
    let sae = Sae {
        d_in: D,
        d_sae: 1,
        activation: Activation::Relu,
        w_enc: vec![1.0; D],
        w_dec: vec![1.0; D],
        b_enc: vec![0.0],
        b_dec: vec![0.0; D],
        io: modelbin_infer::sae::Io::default(),
    };
    let sae_dir = root.path().join("every");
    saelens::save(&sae_dir, &sae, json!({"layer": -1})).unwrap();
    let found = latents(&ok(
        &[
            "sae",
            "features",
            s(&sae_dir),
            s(&dataset),
            "--layer",
            "-1",
            "--quantiles",
            "5",
            "--samples",
            "2",
            "--json",
        ],
        "",
    ));
    let quantiles = found[0]["quantiles"].as_array().unwrap();
    let max = act(N_IMGS - 1, (N_IMGS - 1) % 4);
    let mut in_lowest = 0;
    for (q, interval) in quantiles.iter().enumerate() {
        let (low, high) = (max * q as f32 / 5.0, max * (q + 1) as f32 / 5.0);
        let within = |v: f32| v > low && (v <= high || q == 4);
        // Each image's strongest patch in the interval, if any.
        let strongest: Vec<(usize, usize, f32)> = (0..N_IMGS)
            .filter_map(|img| {
                (0..GRID * GRID)
                    .map(|p| (img, p, act(img, p)))
                    .filter(|&(_, _, v)| within(v))
                    .max_by(|a, b| a.2.total_cmp(&b.2))
            })
            .collect();
        let patches = (0..N_IMGS)
            .flat_map(|img| (0..GRID * GRID).map(move |p| act(img, p)))
            .filter(|&v| within(v))
            .count();
        assert_eq!(interval["fired"], patches as u64, "interval {q}");
        let samples = interval["samples"].as_array().unwrap();
        assert_eq!(samples.len(), strongest.len().min(2), "interval {q}");
        for sample in samples {
            let img = sample["img"].as_u64().unwrap() as usize;
            let &(_, patch, value) = strongest.iter().find(|s| s.0 == img).unwrap();
            close(&sample["value"], &[value]);
            assert_eq!(sample["token"], json!(1 + patch), "interval {q}");
        }
        if q == 0 {
            in_lowest = samples.len();
        }
    }
    assert_eq!(in_lowest, 2, "the lowest interval's 15 patches show images");
}

/// Whether `found` (a number or a list of them) holds `expected`, to the
/// four significant digits contexts keep.
fn close(found: &Value, expected: &[f32]) {
    let found: Vec<f32> = match found.as_array() {
        Some(list) => list.iter().map(|v| v.as_f64().unwrap() as f32).collect(),
        None => vec![found.as_f64().unwrap() as f32],
    };
    assert_eq!(
        found.len(),
        expected.len(),
        "{found:?} against {expected:?}"
    );
    for (f, e) in found.iter().zip(expected) {
        assert!(
            (f - e).abs() <= 5e-4 * e.abs(),
            "{found:?} against {expected:?}"
        );
    }
}

/// The JSON a page embeds.
fn page_data(html: &str) -> Value {
    let start = html
        .find(r#"<script type="application/json" id="data">"#)
        .unwrap();
    let rest = &html[start..];
    let body = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
    serde_json::from_str(body).unwrap()
}

#[test]
fn image_names_print_without_escape_sequences_and_the_page_is_no_input() {
    let root = tempfile::tempdir().unwrap();
    let stem = "\u{1b}[2J\u{1b}]52;c;SGVsbG8=\u{7}picture";
    let (dataset, sae) = setup_named(root.path(), stem);
    let args = ["sae", "features", s(&sae), s(&dataset), "--layer", "-1"];
    let out = run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(!stdout.contains(['\u{1b}', '\u{7}']), "{stdout:?}");
    assert!(
        stdout.contains(r"(\u{1b}[2J\u{1b}]52;c;SGVsbG8=\u{7}picture"),
        "{stdout}"
    );
    // The page cannot be written over the dataset or the autoencoder.
    for input in [dataset.join("metadata.json"), sae.join("cfg.json")] {
        let before = std::fs::read(&input).unwrap();
        let err = common::fails(&[&args[..], &["--html", s(&input)]].concat(), "");
        assert!(err.contains("the output is the input"), "{err}");
        assert_eq!(std::fs::read(&input).unwrap(), before);
    }
}
