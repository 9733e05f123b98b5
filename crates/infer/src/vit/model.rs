//! The forward pass of a vision transformer: patch embedding, CLS,
//! register and position embeddings, then pre-LayerNorm blocks over all
//! images' tokens as one tall matrix.

use std::path::Path;

use rayon::prelude::*;

use crate::hf::weights::Weights;
use crate::nn::attention::{
    add_in_place, attention, check_forward_memory, layer_norm_rows, rows_per_task,
};
use crate::nn::int8::Int8Kernel;
use crate::nn::kernels::{gelu_erf, gelu_tanh, quick_gelu};
use crate::nn::linear::LinearWeights;
use crate::vit::config::{Activation, Family, VitConfig};
use crate::vit::interpolate::resize_grid;
use crate::{Error, Result};

/// A LayerNorm's weight and bias.
type Norm = (Vec<f32>, Vec<f32>);

/// One transformer block's weights; matrices packed for `x · Wᵀ`.
#[derive(Debug, Clone)]
struct Block {
    norm1: Norm,
    /// Query, key and value weights stacked: `[3h, h]`.
    qkv_w: LinearWeights,
    qkv_b: Vec<f32>,
    /// The attention's output projection, with DINOv2's first LayerScale
    /// folded into its rows.
    out_w: LinearWeights,
    out_b: Vec<f32>,
    norm2: Norm,
    fc1_w: LinearWeights,
    fc1_b: Vec<f32>,
    /// The MLP's second layer, with DINOv2's second LayerScale folded in.
    fc2_w: LinearWeights,
    fc2_b: Vec<f32>,
}

/// A vision transformer (DINOv2, CLIP's or SigLIP's vision tower) with its
/// weights in memory as f32, loaded from a Hugging Face model directory.
#[derive(Debug, Clone)]
pub struct VisionModel {
    config: VitConfig,
    /// The patch embedding, a convolution with stride = kernel = patch, as
    /// a linear layer over unfolded patches: `[h, 3·p·p]`.
    patch_w: LinearWeights,
    patch_b: Vec<f32>,
    /// The CLS token (DINOv2's `cls_token`, CLIP's `class_embedding`).
    cls: Option<Vec<f32>>,
    /// DINOv2's register tokens, `[registers, h]`.
    register_tokens: Vec<f32>,
    /// The position embeddings of the CLS token (if any) then of the
    /// config's patch grid, row-major: `[(cls) + patches, h]`.
    position: Vec<f32>,
    /// CLIP's LayerNorm before the first block.
    pre_norm: Option<Norm>,
    blocks: Vec<Block>,
    /// The kernel of int8 linear layers, once quantized.
    int8_kernel: Int8Kernel,
}

/// `w` (`[rows, k]`) with row `r` scaled by `scale[r]`, and `b` likewise:
/// `diag(scale) · (x · Wᵀ + b)` as one linear layer.
fn fold_scale(mut w: Vec<f32>, mut b: Vec<f32>, scale: &[f32], k: usize) -> (Vec<f32>, Vec<f32>) {
    for ((row, bias), &s) in w.chunks_exact_mut(k).zip(&mut b).zip(scale) {
        row.iter_mut().for_each(|v| *v *= s);
        *bias *= s;
    }
    (w, b)
}

impl VisionModel {
    /// Loads the Hugging Face model directory `dir` (`config.json` and
    /// `model.safetensors` as `save_pretrained` writes them) of a DINOv2
    /// model (with or without registers), or of CLIP's or SigLIP's vision
    /// tower, alone or inside a full CLIP / SigLIP model. F32, F16 and BF16
    /// weights are widened to f32.
    pub fn open(dir: &Path) -> Result<VisionModel> {
        let config = VitConfig::read(dir)?;
        let weights = Weights::open(dir, config.prefix)?;
        VisionModel::load(config, &weights)
    }

    fn load(config: VitConfig, w: &Weights) -> Result<VisionModel> {
        let c = &config;
        let (h, p) = (c.hidden, c.patch);
        let (rows, columns) = c.base_grid();
        let patches = rows * columns;
        let zeros = |n: usize| vec![0.0f32; n];
        let (patch_w, patch_b, cls, register_tokens, position, pre_norm);
        match c.family {
            Family::Dinov2 => {
                let e = "embeddings.";
                patch_w = w.get(
                    &format!("{e}patch_embeddings.projection.weight"),
                    &[h, 3, p, p],
                )?;
                patch_b = w.get(&format!("{e}patch_embeddings.projection.bias"), &[h])?;
                cls = Some(w.get(&format!("{e}cls_token"), &[1, 1, h])?);
                register_tokens = if c.registers > 0 {
                    w.get(&format!("{e}register_tokens"), &[1, c.registers, h])?
                } else {
                    Vec::new()
                };
                position = w.get(&format!("{e}position_embeddings"), &[1, patches + 1, h])?;
                pre_norm = None;
            }
            Family::Clip => {
                let e = "embeddings.";
                patch_w = w.get(&format!("{e}patch_embedding.weight"), &[h, 3, p, p])?;
                patch_b = zeros(h);
                cls = Some(w.get(&format!("{e}class_embedding"), &[h])?);
                register_tokens = Vec::new();
                position = w.get(&format!("{e}position_embedding.weight"), &[patches + 1, h])?;
                pre_norm = Some((
                    w.get("pre_layrnorm.weight", &[h])?,
                    w.get("pre_layrnorm.bias", &[h])?,
                ));
            }
            Family::Siglip => {
                let e = "embeddings.";
                patch_w = w.get(&format!("{e}patch_embedding.weight"), &[h, 3, p, p])?;
                patch_b = w.get(&format!("{e}patch_embedding.bias"), &[h])?;
                cls = None;
                register_tokens = Vec::new();
                position = w.get(&format!("{e}position_embedding.weight"), &[patches, h])?;
                pre_norm = None;
            }
        }
        let blocks = (0..c.layers)
            .into_par_iter()
            .map(|i| VisionModel::load_block(c, w, i))
            .collect::<Result<Vec<_>>>()?;
        Ok(VisionModel {
            patch_w: LinearWeights::float(vec![patch_w], 3 * p * p),
            patch_b,
            cls,
            register_tokens,
            position,
            pre_norm,
            blocks,
            int8_kernel: crate::Kernels::chosen()?.int8,
            config,
        })
    }

    /// Block `i`'s weights, under transformers' names for the family.
    fn load_block(c: &VitConfig, w: &Weights, i: usize) -> Result<Block> {
        let (h, f) = (c.hidden, c.intermediate);
        let dinov2 = c.family == Family::Dinov2;
        let prefix = if dinov2 {
            format!("encoder.layer.{i}.")
        } else {
            format!("encoder.layers.{i}.")
        };
        let get = |name: &str, shape: &[usize]| w.get(&format!("{prefix}{name}"), shape);
        let norm = |name: &str| {
            Ok::<_, Error>((
                get(&format!("{name}.weight"), &[h])?,
                get(&format!("{name}.bias"), &[h])?,
            ))
        };
        let [q, k, v, out] = if dinov2 {
            [
                "attention.attention.query",
                "attention.attention.key",
                "attention.attention.value",
                "attention.output.dense",
            ]
        } else {
            [
                "self_attn.q_proj",
                "self_attn.k_proj",
                "self_attn.v_proj",
                "self_attn.out_proj",
            ]
        };
        let mut qkv_b = Vec::with_capacity(3 * h);
        let mut qkv_w = Vec::with_capacity(3);
        for name in [q, k, v] {
            qkv_w.push(get(&format!("{name}.weight"), &[h, h])?);
            let bias = if c.qkv_bias {
                get(&format!("{name}.bias"), &[h])?
            } else {
                vec![0.0; h]
            };
            qkv_b.extend(bias);
        }
        let (mut out_w, mut out_b) = (
            get(&format!("{out}.weight"), &[h, h])?,
            get(&format!("{out}.bias"), &[h])?,
        );
        let (fc1_w, fc1_b) = (get("mlp.fc1.weight", &[f, h])?, get("mlp.fc1.bias", &[f])?);
        let (mut fc2_w, mut fc2_b) = (get("mlp.fc2.weight", &[h, f])?, get("mlp.fc2.bias", &[h])?);
        let (norm1, norm2) = if dinov2 {
            let scale1 = get("layer_scale1.lambda1", &[h])?;
            let scale2 = get("layer_scale2.lambda1", &[h])?;
            (out_w, out_b) = fold_scale(out_w, out_b, &scale1, h);
            (fc2_w, fc2_b) = fold_scale(fc2_w, fc2_b, &scale2, f);
            (norm("norm1")?, norm("norm2")?)
        } else {
            (norm("layer_norm1")?, norm("layer_norm2")?)
        };
        Ok(Block {
            norm1,
            qkv_w: LinearWeights::float(qkv_w, h),
            qkv_b,
            out_w: LinearWeights::float(vec![out_w], h),
            out_b,
            norm2,
            fc1_w: LinearWeights::float(vec![fc1_w], h),
            fc1_b,
            fc2_w: LinearWeights::float(vec![fc2_w], f),
            fc2_b,
        })
    }

    /// Quantizes the blocks' linear layers (attention and MLP) to int8,
    /// with a scale per block of 32 inputs of each weight row; their
    /// inputs are quantized row by row as they come (see
    /// `modelbin convert --dtype int8`). Faster, less exact: the hidden
    /// states differ from the f32 model's by about a percent. The patch
    /// embedding, LayerNorms and attention stay in f32. The int8 kernel is
    /// the process's ([`Kernels::chosen`](crate::Kernels::chosen)).
    pub fn quantize_int8(&mut self) {
        self.blocks.par_iter_mut().for_each(|b| {
            for w in [&mut b.qkv_w, &mut b.out_w, &mut b.fc1_w, &mut b.fc2_w] {
                *w = w.to_int8();
            }
        });
    }

    /// Whether the blocks' linear layers run on int8 weights.
    pub fn is_int8(&self) -> bool {
        self.blocks.iter().any(|b| b.qkv_w.is_int8())
    }

    /// The model's family.
    pub fn family(&self) -> Family {
        self.config.family
    }

    /// Transformer blocks (layers).
    pub fn blocks(&self) -> usize {
        self.config.layers
    }

    /// Width of the hidden states (`hidden_size`).
    pub fn width(&self) -> usize {
        self.config.hidden
    }

    /// Side of the square patches, in pixels.
    pub fn patch_size(&self) -> usize {
        self.config.patch
    }

    /// Whether a CLS token leads each image's tokens (DINOv2 and CLIP; not
    /// SigLIP).
    pub fn has_cls(&self) -> bool {
        self.config.has_cls()
    }

    /// Register tokens after the CLS token (DINOv2 with registers; else 0).
    pub fn registers(&self) -> usize {
        self.config.registers
    }

    /// The configuration's image size (height, width): the images the
    /// position embeddings were made for.
    pub fn image_size(&self) -> (usize, usize) {
        (self.config.image_size, self.config.image_size)
    }

    /// Tokens per image: CLS (if any), registers, then one per patch.
    fn sequence_length(&self, grid: (usize, usize)) -> usize {
        usize::from(self.has_cls()) + self.registers() + grid.0 * grid.1
    }

    /// The patch grid (rows, columns) of `height × width` images: both
    /// must be multiples of the patch size; CLIP and SigLIP, whose
    /// position embeddings are not interpolated, take only the
    /// configuration's image size.
    pub fn patch_grid(&self, height: usize, width: usize) -> Result<(usize, usize)> {
        let p = self.config.patch;
        let refuse = |reason: String| {
            Err(Error::ImageSize {
                height,
                width,
                reason,
            })
        };
        if height == 0 || width == 0 || !height.is_multiple_of(p) || !width.is_multiple_of(p) {
            return refuse(format!(
                "both sides must be positive multiples of the patch size {p}"
            ));
        }
        if self.config.family != Family::Dinov2 && (height, width) != self.image_size() {
            let side = self.config.image_size;
            return refuse(format!(
                "{} takes only its configuration's {side}×{side} images",
                self.config.family.name()
            ));
        }
        if height / p > MAX_GRID_SIDE || width / p > MAX_GRID_SIDE {
            return refuse(format!("more than {MAX_GRID_SIDE} patches on a side"));
        }
        Ok((height / p, width / p))
    }

    /// The hidden states after each block of `blocks` (0 is the first;
    /// transformers' `hidden_states[block + 1]`, before any final
    /// LayerNorm) of `images` images of `height × width` pixels.
    /// `pixel_values` are normalized, `[images, 3, height, width]`
    /// row-major, as transformers' image processors give them. Returns one
    /// `[images, tokens, width]` matrix per entry of `blocks`, in the order
    /// asked; an image's tokens are its CLS token (if any), its register
    /// tokens, then its patches row by row. The pass stops after the last
    /// block asked for; it runs on the current rayon pool.
    pub fn hidden_states(
        &self,
        pixel_values: &[f32],
        images: usize,
        height: usize,
        width: usize,
        blocks: &[usize],
    ) -> Result<Vec<Vec<f32>>> {
        let grid = self.patch_grid(height, width)?;
        let layers = self.blocks.len();
        if let Some(&block) = blocks.iter().find(|&&b| b >= layers) {
            return Err(invalid_argument(format!(
                "block {block} of a model with {layers} blocks"
            )));
        }
        let expected = images
            .checked_mul(3 * height * width)
            .filter(|&n| n == pixel_values.len());
        if expected.is_none() {
            return Err(invalid_argument(format!(
                "{} pixel values for {images} images of 3 × {height} × {width}",
                pixel_values.len()
            )));
        }
        let mut out = vec![Vec::new(); blocks.len()];
        let Some(last) = blocks.iter().max() else {
            return Ok(out);
        };
        if images == 0 {
            return Ok(out);
        }
        let seq = self.sequence_length(grid);
        let rows = images.saturating_mul(seq);
        let c = &self.config;
        // The patches unfolded hold as many values as the pixels.
        let copies = blocks.len().saturating_mul(rows).saturating_mul(c.hidden);
        check_forward_memory(
            rows,
            (c.hidden, c.intermediate),
            pixel_values.len().saturating_add(copies),
            || {
                format!(
                    "a forward pass over {images} images of {height}×{width} pixels ({seq} tokens each)"
                )
            },
        )?;
        let mut x = self.embed(pixel_values, images, (height, width), grid);
        let mut scratch = Scratch::new(images * seq, &self.config);
        let spans: Vec<(usize, usize)> = (0..images).map(|i| (i * seq, seq)).collect();
        for (index, block) in self.blocks.iter().enumerate().take(last + 1) {
            self.block(block, &spans, &mut x, &mut scratch);
            for (slot, _) in blocks.iter().enumerate().filter(|(_, b)| **b == index) {
                out[slot] = x.clone();
            }
        }
        Ok(out)
    }

    /// The position embeddings of a `grid` of patches: the configuration's,
    /// or (DINOv2) those resized to the grid with PyTorch's bicubic
    /// interpolation (antialiased for DINOv2 with registers, as in
    /// transformers).
    fn patch_positions(&self, grid: (usize, usize)) -> Vec<f32> {
        let c = &self.config;
        let base = &self.position[usize::from(c.has_cls()) * c.hidden..];
        if grid == c.base_grid() {
            return base.to_vec();
        }
        resize_grid(base, c.base_grid(), grid, c.hidden, c.antialiased_positions)
    }

    /// The embeddings of every image's tokens, `[images · seq, h]`.
    fn embed(
        &self,
        pixel_values: &[f32],
        images: usize,
        (height, width): (usize, usize),
        grid: (usize, usize),
    ) -> Vec<f32> {
        let c = &self.config;
        let (h, p) = (c.hidden, c.patch);
        let patches = grid.0 * grid.1;
        let k = 3 * p * p;
        // Unfold: one row per patch, channel-major like the conv weight.
        let mut unfolded = vec![0.0f32; images * patches * k];
        unfolded
            .par_chunks_mut(patches * k)
            .zip(pixel_values.par_chunks(3 * height * width))
            .for_each(|(rows, image)| {
                for (index, row) in rows.chunks_exact_mut(k).enumerate() {
                    let (top, left) = (index / grid.1 * p, index % grid.1 * p);
                    for (channel, block) in row.chunks_exact_mut(p * p).enumerate() {
                        let plane = &image[channel * height * width..];
                        for (dy, line) in block.chunks_exact_mut(p).enumerate() {
                            let at = (top + dy) * width + left;
                            line.copy_from_slice(&plane[at..at + p]);
                        }
                    }
                }
            });
        let mut embedded = vec![0.0f32; images * patches * h];
        self.patch_w
            .apply(&unfolded, &self.patch_b, &mut embedded, self.int8_kernel);
        drop(unfolded);
        let positions = self.patch_positions(grid);
        let seq = self.sequence_length(grid);
        let lead = seq - patches;
        let mut x = vec![0.0f32; images * seq * h];
        x.par_chunks_mut(seq * h)
            .zip(embedded.par_chunks(patches * h))
            .for_each(|(tokens, patches)| {
                let (head, rest) = tokens.split_at_mut(lead * h);
                if let Some(cls) = &self.cls {
                    for ((t, c), pos) in head[..h].iter_mut().zip(cls).zip(&self.position) {
                        *t = c + pos;
                    }
                    head[h..].copy_from_slice(&self.register_tokens);
                }
                for ((t, e), pos) in rest.iter_mut().zip(patches).zip(&positions) {
                    *t = e + pos;
                }
            });
        if let Some((weight, bias)) = &self.pre_norm {
            let normed = x.clone();
            layer_norm_rows(&normed, (weight, bias), &mut x, h, c.eps);
        }
        x
    }

    /// One pre-LayerNorm block, in place on `x`.
    fn block(&self, b: &Block, spans: &[(usize, usize)], x: &mut [f32], s: &mut Scratch) {
        let c = &self.config;
        let (h, f) = (c.hidden, c.intermediate);
        let kernel = self.int8_kernel;
        layer_norm_rows(x, (&b.norm1.0, &b.norm1.1), &mut s.normed, h, c.eps);
        b.qkv_w.apply(&s.normed, &b.qkv_b, &mut s.qkv, kernel);
        attention(spans, &s.qkv, &mut s.context, h, c.heads);
        b.out_w.apply(&s.context, &b.out_b, &mut s.hidden, kernel);
        add_in_place(x, &s.hidden);
        layer_norm_rows(x, (&b.norm2.0, &b.norm2.1), &mut s.normed, h, c.eps);
        b.fc1_w
            .apply(&s.normed, &b.fc1_b, &mut s.intermediate, kernel);
        let activation: fn(&mut [f32]) = match c.activation {
            Activation::GeluErf => gelu_erf,
            Activation::GeluTanh => gelu_tanh,
            Activation::QuickGelu => quick_gelu,
        };
        s.intermediate
            .par_chunks_mut(f * rows_per_task(x.len() / h))
            .for_each(activation);
        b.fc2_w
            .apply(&s.intermediate, &b.fc2_b, &mut s.hidden, kernel);
        add_in_place(x, &s.hidden);
    }
}

/// The most patches on a side of an image (a 7168-pixel side at patch 14).
const MAX_GRID_SIDE: usize = 512;

fn invalid_argument(message: String) -> Error {
    Error::Format(modelbin_format::Error::InvalidArgument(message))
}

/// Buffers reused across the blocks of one forward pass.
struct Scratch {
    normed: Vec<f32>,
    qkv: Vec<f32>,
    context: Vec<f32>,
    hidden: Vec<f32>,
    intermediate: Vec<f32>,
}

impl Scratch {
    fn new(rows: usize, c: &VitConfig) -> Self {
        let h = c.hidden;
        Scratch {
            normed: vec![0.0; rows * h],
            qkv: vec![0.0; rows * 3 * h],
            context: vec![0.0; rows * h],
            hidden: vec![0.0; rows * h],
            intermediate: vec![0.0; rows * c.intermediate],
        }
    }
}
