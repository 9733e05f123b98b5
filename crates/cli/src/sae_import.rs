//! `modelbin sae import`: an autoencoder of any layout read
//! ([`modelbin_infer::sae::layouts`]: SAELens, Gemma Scope, Gemma Scope 2,
//! Llama Scope, sparsify) written in SAELens's layout.

use std::path::PathBuf;

use clap::Args;
use modelbin_infer::sae::layouts;
use serde_json::{Map, Value};

use crate::failure::Failure;
use crate::sae_view::sae_failure;
use crate::stdout::{outln, print_json};

/// Arguments of `modelbin sae import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The autoencoder's directory, in any layout modelbin reads (the
    /// layout is detected).
    src: PathBuf,
    /// The directory to write (cfg.json, sae_weights.safetensors).
    #[arg(short, long)]
    out: PathBuf,
    /// The hook point to record (blocks.L.hook_resid_post, ...), over what
    /// the layout says (Gemma Scope's comes from its path).
    #[arg(long, value_name = "NAME")]
    hook: Option<String>,
    /// SAELens's name of the model, over what the layout says.
    #[arg(long, value_name = "NAME")]
    model_name: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `modelbin sae import`.
pub fn import(args: &ImportArgs) -> Result<(), Failure> {
    let mut overrides = Map::new();
    if let Some(hook) = &args.hook {
        overrides.insert("hook_name".into(), hook.clone().into());
    }
    if let Some(name) = &args.model_name {
        overrides.insert("model_name".into(), name.clone().into());
    }
    let summary =
        layouts::import(&args.src, &args.out, overrides).map_err(|e| sae_failure(e, &args.src))?;
    if args.json {
        print_json(&serde_json::json!({
            "layout": summary.layout.name(),
            "out": summary.out,
            "architecture": summary.architecture,
            "d_in": summary.d_in,
            "d_sae": summary.d_sae,
            "hook_name": summary.hook_name.map_or(Value::Null, Value::from),
        }))
    } else {
        outln!(
            "{}: {} autoencoder ({}, {} → {} latents, hook {}) written to {}",
            args.src.display(),
            summary.layout.name(),
            summary.architecture,
            summary.d_in,
            summary.d_sae,
            summary.hook_name.as_deref().unwrap_or("not named"),
            summary.out.display()
        )
    }
}
