//! The hand-written backward pass equals central finite differences, in
//! f64, for every parameter tensor of a tiny model (with and without
//! dropout, whose masks are replayed from the same seed).

use modelbin_format::tllm::Config;
use modelbin_infer::rng::Rng;
use modelbin_infer::tllm::train::backprop::{ParamLayout, sequence_loss};

fn tiny(dropout: f32) -> Config {
    Config {
        model_dim: 8,
        n_layers: 2,
        n_heads: 2,
        ffn_hidden_dim: 12,
        max_seq_len: 7,
        vocab_size: 11,
        dropout,
    }
}

fn check(dropout: f32) {
    let config = tiny(dropout);
    let layout = ParamLayout::new(&config);
    let mut rng = Rng::new(7);
    // Random everything, LayerNorm weights and biases included, so that
    // every gradient path carries signal.
    let params: Vec<f64> = (0..layout.len()).map(|_| rng.normal(0.4)).collect();
    let inputs = [3u32, 1, 4, 1, 5, 9, 2];
    let targets = [1u32, 4, 1, 5, 9, 2, 6];
    let loss = |p: &[f64]| {
        sequence_loss(
            &layout,
            p,
            &inputs,
            &targets,
            dropout,
            &mut Rng::new(99),
            None,
        )
    };
    let mut grad = vec![0.0f64; layout.len()];
    let base = sequence_loss(
        &layout,
        &params,
        &inputs,
        &targets,
        dropout,
        &mut Rng::new(99),
        Some((&mut grad, 1.0)),
    );
    assert!((base - loss(&params)).abs() < 1e-12);
    let eps = 1e-5;
    let mut worst = 0.0f64;
    for (tensor, range) in layout.tensor_ranges().into_iter().enumerate() {
        let step = (range.len() / 24).max(1);
        for i in range.clone().step_by(step) {
            let mut p = params.clone();
            p[i] = params[i] + eps;
            let up = loss(&p);
            p[i] = params[i] - eps;
            let down = loss(&p);
            let numeric = (up - down) / (2.0 * eps);
            let analytic = grad[i];
            let error = (numeric - analytic).abs() / (numeric.abs() + analytic.abs()).max(1e-6);
            worst = worst.max(error);
            assert!(
                error <= 1e-4,
                "dropout {dropout}, tensor {tensor}, parameter {i}: analytic {analytic}, numeric {numeric}"
            );
        }
    }
    println!("dropout {dropout}: worst relative error {worst:.2e}");
}

#[test]
fn gradients_match_finite_differences() {
    check(0.0);
}

#[test]
fn gradients_match_finite_differences_with_dropout() {
    check(0.3);
}
