//! `modelbin tokens` end to end.

use std::path::Path;

mod common;

use common::{fails, ok, run as modelbin, usage};

#[test]
fn encode_and_decode() {
    assert_eq!(
        ok(&["tokens", "encode", "-e", "cl100k_base"], "hello world"),
        "[15339,1917]\n"
    );
    assert_eq!(
        ok(&["tokens", "encode", "-m", "gpt-4o"], "hello world"),
        "[24912,2375]\n"
    );
    assert_eq!(
        ok(
            &["tokens", "decode", "-e", "cl100k_base", "15339", "1917"],
            ""
        ),
        "hello world"
    );
    assert_eq!(
        ok(&["tokens", "decode", "-e", "cl100k_base"], "[15339, 1917]"),
        "hello world"
    );
    assert_eq!(
        ok(
            &["tokens", "encode", "-e", "cl100k_base", "--jsonl"],
            "\"hello world\"\n\"<|endoftext|>\"\n"
        ),
        "[15339,1917]\n[27,91,8862,728,428,91,29]\n"
    );
    assert_eq!(
        ok(
            &["tokens", "decode", "-e", "cl100k_base", "--jsonl"],
            "[15339,1917]\n[100257]\n"
        ),
        "\"hello world\"\n\"<|endoftext|>\"\n"
    );
    assert_eq!(
        ok(
            &["tokens", "encode", "-e", "cl100k_base", "--special", "all"],
            "a<|endoftext|>"
        ),
        "[64,100257]\n"
    );
    let err = fails(&["tokens", "decode", "-e", "cl100k_base", "999999"], "");
    assert!(err.contains("999999"), "{err}");
    let err = fails(
        &["tokens", "encode", "-e", "cl100k_base", "--jsonl"],
        "not json\n",
    );
    assert!(err.contains("line 1"), "{err}");
}

#[test]
fn count_files_wc_style() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    let b = dir.path().join("b.txt");
    std::fs::write(&a, "hello world").unwrap();
    std::fs::write(&b, "hello world hello world").unwrap();
    let text = ok(
        &[
            "tokens",
            "count",
            "-e",
            "cl100k_base",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ],
        "",
    );
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["2", a.to_str().unwrap()]);
    assert_eq!(rows[1], ["4", b.to_str().unwrap()]);
    assert_eq!(rows[2], ["6", "total"]);
    let json: serde_json::Value = serde_json::from_str(&ok(
        &[
            "tokens",
            "count",
            "--json",
            "-e",
            "cl100k_base",
            a.to_str().unwrap(),
        ],
        "",
    ))
    .unwrap();
    assert_eq!(json["total"], 2);
    assert_eq!(json["encoding"], "cl100k_base");
    assert_eq!(
        ok(&["tokens", "count", "-e", "cl100k_base"], "hello world")
            .split_whitespace()
            .next(),
        Some("2")
    );
}

#[test]
fn count_the_readme_with_the_embedded_vocabulary() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(&readme).unwrap();
    let expected = modelbin_tokenize::Tokenizer::embedded("o200k_base")
        .unwrap()
        .count(&text)
        .unwrap();
    let out = ok(&["tokens", "count", readme.to_str().unwrap()], "");
    assert_eq!(out.split_whitespace().next().unwrap(), expected.to_string());
}

#[test]
fn invalid_utf8_is_read_lossily_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.txt");
    std::fs::write(&path, b"ok \xff\xfe ok").unwrap();
    let out = modelbin(
        &[
            "tokens",
            "count",
            "-e",
            "cl100k_base",
            path.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid UTF-8"));
    let expected = modelbin_tokenize::Tokenizer::embedded("cl100k_base")
        .unwrap()
        .count("ok \u{FFFD}\u{FFFD} ok")
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&format!("{expected:>7} ")));
}

#[test]
fn cost_estimates() {
    let json: serde_json::Value = serde_json::from_str(&ok(
        &[
            "tokens",
            "cost",
            "-m",
            "gpt-4o",
            "--output-tokens",
            "1000000",
            "--json",
        ],
        "hello world",
    ))
    .unwrap();
    assert_eq!(json["encoding"], "o200k_base");
    assert_eq!(json["input_tokens"], 2);
    assert_eq!(json["output_cost"], 10.0);
    assert_eq!(json["priced_as"], "gpt-4o");
    let err = usage(&["tokens", "cost", "-m", "llama-3"], "x");
    assert!(
        err.contains("unknown model `llama-3`") && err.contains("--prices FILE"),
        "{err}"
    );
    // A variant is never priced as its base model.
    for variant in ["o1-preview", "gpt-5-codex", "gpt-4-32k", "gpt-4o-banana"] {
        let err = usage(&["tokens", "cost", "-m", variant], "x");
        assert!(err.contains(&format!("unknown model `{variant}`")), "{err}");
    }
    // A dated snapshot is, and says so.
    let text = ok(
        &["tokens", "cost", "-m", "gpt-4o-2024-08-06"],
        "hello world",
    );
    assert!(text.contains("priced as gpt-4o"), "{text}");
    // Cached input tokens at the cached rate: gpt-4o 2.50 → 1.25 per 1M.
    let json: serde_json::Value = serde_json::from_str(&ok(
        &[
            "tokens",
            "cost",
            "-m",
            "gpt-4o",
            "--cached-tokens",
            "2",
            "--json",
            "-t",
            "hello world",
        ],
        "",
    ))
    .unwrap();
    assert_eq!(json["cached_tokens"], 2);
    assert_eq!(json["input_cost"], 2.0 * 1.25 / 1e6);
    let err = usage(
        &["tokens", "cost", "-m", "gpt-4", "--cached-tokens", "1"],
        "x",
    );
    assert!(err.contains("no cached-input price"), "{err}");
    let err = usage(
        &["tokens", "cost", "-m", "gpt-4o", "--cached-tokens", "5"],
        "x",
    );
    assert!(err.contains("more than the 1 input tokens"), "{err}");
    // A pro model has its own price (o1-pro: 150 per 1M input tokens).
    let json: serde_json::Value = serde_json::from_str(&ok(
        &[
            "tokens",
            "cost",
            "-m",
            "o1-pro",
            "--json",
            "-t",
            "hello world",
        ],
        "",
    ))
    .unwrap();
    assert_eq!(
        (json["priced_as"].as_str(), json["input_cost"].as_f64()),
        (Some("o1-pro"), Some(2.0 * 150.0 / 1e6))
    );
    // Prices over 90 days old are flagged.
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.json");
    std::fs::write(
        &old,
        r#"{"as_of": "2020-01-01", "currency": "USD", "unit": "per 1M tokens", "models": {}}"#,
    )
    .unwrap();
    let out = modelbin(
        &[
            "tokens",
            "cost",
            "-m",
            "gpt-4o",
            "--prices",
            old.to_str().unwrap(),
        ],
        "x",
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("warning: the price table is from 2020-01-01"),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    let messages = dir.path().join("chat.json");
    std::fs::write(&messages, r#"[{"role": "user", "content": "hello world"}]"#).unwrap();
    let json: serde_json::Value = serde_json::from_str(&ok(
        &[
            "tokens",
            "cost",
            "-m",
            "gpt-4",
            "--messages",
            messages.to_str().unwrap(),
            "--json",
        ],
        "",
    ))
    .unwrap();
    // 3 per message + "user" (1) + "hello world" (2) + 3 priming.
    assert_eq!(json["input_tokens"], 9);
    // `tokens count` counts the same chat the same way, beside texts.
    let counted: serde_json::Value = serde_json::from_str(&ok(
        &[
            "tokens",
            "count",
            "-m",
            "gpt-4",
            "--messages",
            messages.to_str().unwrap(),
            "--text",
            "hello world",
            "--json",
        ],
        "",
    ))
    .unwrap();
    assert_eq!(counted["inputs"][0]["tokens"], 9);
    assert_eq!(counted["total"], 11);
    // Model names mean the same to count and cost: case aside, a priced
    // model counts with its price entry's encoding.
    let gpt4o = ok(
        &["tokens", "count", "-m", "GPT-4o", "--text", "hi", "--json"],
        "",
    );
    assert!(gpt4o.contains("o200k_base"), "{gpt4o}");

    let prices = dir.path().join("prices.json");
    std::fs::write(&prices, r#"{"as_of": "2030-01-01", "currency": "USD", "unit": "per 1M tokens", "models": {"gpt-4o": {"input": 1000000.0}}}"#).unwrap();
    let json: serde_json::Value = serde_json::from_str(&ok(
        &[
            "tokens",
            "cost",
            "-m",
            "gpt-4o",
            "--prices",
            prices.to_str().unwrap(),
            "--json",
        ],
        "hello world",
    ))
    .unwrap();
    assert_eq!(json["input_cost"], 2.0);
    assert_eq!(json["prices_as_of"], "2030-01-01 (bundled 2026-11-23)");
    // --prices overlays: the bundled entries it does not name stay.
    let json: serde_json::Value = serde_json::from_str(&ok(
        &[
            "tokens",
            "cost",
            "-m",
            "gpt-5",
            "--prices",
            prices.to_str().unwrap(),
            "--json",
        ],
        "hello world",
    ))
    .unwrap();
    assert_eq!(json["priced_as"], "gpt-5");
    let models: serde_json::Value =
        serde_json::from_str(&ok(&["tokens", "models", "--json"], "")).unwrap();
    let gpt4o = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "gpt-4o")
        .unwrap();
    assert_eq!(gpt4o["encoding"], "o200k_base");
    assert_eq!(gpt4o["input"], 2.5);
}

#[test]
fn a_price_table_in_another_currency_and_unit_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"as_of": "2030-01-01", "currency": "EUR", "unit": "per 1K tokens",
            "models": {"my-model": {"input": 0.5, "output": 1.5, "encoding": "o200k_base"}}}"#,
    )
    .unwrap();
    let args = |json: bool| {
        let mut args = vec![
            "tokens",
            "cost",
            "-m",
            "my-model",
            "--output-tokens",
            "1000",
            "--prices",
            prices.to_str().unwrap(),
        ];
        if json {
            args.push("--json");
        }
        args
    };
    // "hello world" is 2 tokens: 2 × 0.5 / 1000 EUR in, 1000 × 1.5 / 1000 out.
    let json: serde_json::Value = serde_json::from_str(&ok(&args(true), "hello world")).unwrap();
    assert_eq!(json["currency"], "EUR");
    assert!(
        (json["input_cost"].as_f64().unwrap() - 0.001).abs() < 1e-12,
        "{json}"
    );
    assert!(
        (json["output_cost"].as_f64().unwrap() - 1.5).abs() < 1e-12,
        "{json}"
    );
    let text = ok(&args(false), "hello world");
    assert!(
        text.contains("= 0.001000 EUR;") && !text.contains('$'),
        "{text}"
    );
    // A field it cannot honour is refused, naming it.
    std::fs::write(
        &prices,
        r#"{"as_of": "yesterday", "currency": "EUR", "unit": "per 1K tokens", "models": {}}"#,
    )
    .unwrap();
    let stderr = fails(&args(false), "hi");
    assert!(
        stderr.contains("as_of `yesterday` is not a YYYY-MM-DD date"),
        "{stderr}"
    );
}

#[test]
fn every_tiktoken_encoding_is_built_in_and_vocabularies_load_from_files() {
    // tiktoken's ids for "hello world<|endoftext|>" (special as text) in
    // the GPT-2 family, and p50k_edit's special tokens.
    for encoding in ["gpt2", "r50k_base", "p50k_base", "p50k_edit"] {
        assert_eq!(
            ok(&["tokens", "encode", "-e", encoding], "hello world"),
            "[31373,995]\n"
        );
    }
    assert_eq!(
        ok(
            &["tokens", "encode", "-e", "p50k_edit", "--special", "all"],
            "<|fim_prefix|>"
        ),
        "[50281]\n"
    );
    let err = usage(&["tokens", "count", "-e", "p60k_base"], "x");
    assert!(err.contains("o200k_harmony"), "{err}");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-data/tiktoken/p50k_base.tiktoken");
    assert!(source.is_file(), "run scripts/fetch-test-data.sh");
    let dir = tempfile::tempdir().unwrap();
    let vocab = dir.path().join("p50k.bpe2");
    ok(
        &["convert", source.to_str().unwrap(), vocab.to_str().unwrap()],
        "",
    );
    assert_eq!(
        ok(
            &["tokens", "encode", "--vocab", vocab.to_str().unwrap()],
            "hello world"
        ),
        "[31373,995]\n"
    );
    // The .tiktoken file itself is a vocabulary too, with the same ids.
    assert_eq!(
        ok(
            &["tokens", "encode", "--vocab", source.to_str().unwrap()],
            "hello world<|endoftext|>"
        ),
        "[31373,995,27,91,437,1659,5239,91,29]\n"
    );
    let err = fails(
        &["tokens", "count", "--vocab", "Cargo.toml", "--text", "x"],
        "",
    );
    assert!(err.contains("Cargo.toml"), "{err}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", "--json", vocab.to_str().unwrap()], "")).unwrap();
    assert_eq!(json["encoding"], "p50k_base");
    assert_eq!(json["token_count"], 50281);

    let broken = dir.path().join("broken.bpe2");
    let mut bytes = std::fs::read(&vocab).unwrap();
    bytes.truncate(1000);
    std::fs::write(&broken, bytes).unwrap();
    let err = fails(
        &["tokens", "count", "--vocab", broken.to_str().unwrap()],
        "x",
    );
    assert!(err.contains("implies a file of"), "{err}");
    let err = fails(&["verify", broken.to_str().unwrap()], "");
    assert!(err.contains("broken.bpe2"), "{err}");
}

#[test]
fn unknown_vocabularies_need_a_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("bytes.tiktoken");
    let lines: String = (0..=255u8)
        .map(|b| {
            use base64::Engine as _;
            format!(
                "{} {b}\n",
                base64::engine::general_purpose::STANDARD.encode([b])
            )
        })
        .collect::<String>()
        + "aGk= 256\n";
    std::fs::write(&source, lines).unwrap();
    let vocab = dir.path().join("bytes.bpe2");
    ok(
        &["convert", source.to_str().unwrap(), vocab.to_str().unwrap()],
        "",
    );
    let err = fails(
        &["tokens", "encode", "--vocab", vocab.to_str().unwrap()],
        "hi there",
    );
    assert!(err.contains("give a pre-tokenizer pattern"), "{err}");
    assert_eq!(
        ok(
            &[
                "tokens",
                "encode",
                "--vocab",
                vocab.to_str().unwrap(),
                "--pattern",
                r"\w+|\s+"
            ],
            "hi hi"
        ),
        "[256,32,256]\n"
    );
    let err = usage(
        &[
            "tokens",
            "encode",
            "--vocab",
            vocab.to_str().unwrap(),
            "--pattern",
            "(",
        ],
        "x",
    );
    assert!(err.contains("invalid pre-tokenizer pattern"), "{err}");
}

#[test]
fn a_request_body_with_tools_tool_calls_and_images_is_counted_and_assumptions_said() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("request.json");
    let chat = r#"{"model": "gpt-4o", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "What is in this picture, and the weather?"},
                                     {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City"}}}}}]}"#;
    std::fs::write(&body, chat).unwrap();
    let out = modelbin(
        &[
            "tokens",
            "cost",
            "-m",
            "gpt-4o",
            "--messages",
            body.to_str().unwrap(),
            "--json",
        ],
        "",
    );
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tokenizer = modelbin_tokenize::Tokenizer::embedded("o200k_base").unwrap();
    let parsed = modelbin_tokenize::cost::chat::Chat::parse(chat).unwrap();
    let expected = parsed
        .count(
            tokenizer,
            &modelbin_tokenize::cost::chat::ChatRules::for_model("gpt-4o"),
        )
        .unwrap();
    // The image of unknown size counts as 1024 x 1024 at high detail: 765.
    assert_eq!(expected.images, 765);
    assert!(expected.tools > 0 && expected.tool_calls > 0);
    assert_eq!(json["input_tokens"], expected.total());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("the size of image https://example.com/a.png is unknown")
            && stderr.contains("counted as 1024x1024 at detail \"auto\": 765 tokens"),
        "{stderr}"
    );
    std::fs::write(&body, r#"{"messages": "hi"}"#).unwrap();
    let err = fails(
        &["tokens", "count", "--messages", body.to_str().unwrap()],
        "",
    );
    assert!(
        err.contains("not a chat (a JSON array of messages"),
        "{err}"
    );
}
