//! `modelbin acts` end to end.

mod common;

use common::{fails, ok};

#[test]
fn write_inspect_verify_get_stats_bench() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    let write = [
        "acts",
        "write-synthetic",
        r,
        "--n-imgs",
        "9",
        "--patches",
        "3",
        "--d-vit",
        "4",
        "--max-patches-per-shard",
        "32",
        "--layers",
        "-2,3",
    ];
    let out = ok(&write, "");
    let dir = out.split(':').next().unwrap().to_owned();
    assert!(
        ok(&["acts", "verify", "--values", &dir], "")
            .contains("OK (saev, 72 vectors of 4 in 3 shards)")
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", "--json", &dir], "")).unwrap();
    assert_eq!(json["imgs_per_shard"], 4);
    assert_eq!(json["metadata"]["layers"], serde_json::json!([-2, 3]));
    let vector: Vec<f32> = serde_json::from_str(&ok(
        &[
            "acts", "get", &dir, "--img", "8", "--layer", "-2", "--token", "3",
        ],
        "",
    ))
    .unwrap();
    assert_eq!(vector.len(), 4);
    let stats: serde_json::Value =
        serde_json::from_str(&ok(&["acts", "stats", "--json", &dir], "")).unwrap();
    assert_eq!(stats[0]["count"], 9 * 4 * 4);
    let bench: serde_json::Value = serde_json::from_str(&ok(
        &["acts", "bench", "--json", "--batch-size", "5", &dir],
        "",
    ))
    .unwrap();
    assert_eq!(bench["vectors"], 72);

    assert!(
        fails(
            &[
                "acts", "get", &dir, "--img", "9", "--layer", "-2", "--token", "0"
            ],
            ""
        )
        .contains("out of range")
    );
    assert!(
        fails(
            &[
                "acts", "get", &dir, "--img", "0", "--layer", "0", "--token", "0"
            ],
            ""
        )
        .contains("not recorded")
    );
    let again = fails(&write, "");
    assert!(again.contains("already written"), "{again}");

    // A NaN in the data fails `verify --values`, naming the layer.
    let shard = std::path::Path::new(&dir).join("acts000000.bin");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[..4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&shard, &bytes).unwrap();
    assert!(ok(&["acts", "verify", &dir], "").contains("OK"));
    assert!(fails(&["acts", "verify", "--values", &dir], "").contains("layer -2: 1 NaN"));
    // A truncated shard fails plain verify.
    std::fs::write(&shard, &bytes[..10]).unwrap();
    assert!(fails(&["verify", &dir], "").contains("shard is 10 bytes"));
}
