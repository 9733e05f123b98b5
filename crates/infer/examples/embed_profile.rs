use modelbin_infer::Embedder;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut e = Embedder::open(&args[1]).unwrap();
    if let Ok(k) = std::env::var("K") {
        let k = modelbin_infer::Int8Kernel::available()
            .into_iter()
            .find(|x| x.name() == k)
            .unwrap();
        e.set_int8_kernel(k).unwrap();
    }
    let words: usize = args[2].parse().unwrap();
    let iters: usize = args[3].parse().unwrap();
    let text = std::fs::read_to_string("README.md").unwrap();
    let w: Vec<&str> = text.split_whitespace().skip(100).take(words).collect();
    let ids = vec![e.tokenize(&w.join(" "))];
    eprintln!("tokens {}", ids[0].len());
    let threads: usize = std::env::var("T").map(|v| v.parse().unwrap()).unwrap_or(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .unwrap();
    let t = std::time::Instant::now();
    if threads == 0 {
        for _ in 0..iters {
            std::hint::black_box(e.embed_ids(&ids).unwrap());
        }
    } else {
        pool.install(|| {
            for _ in 0..iters {
                std::hint::black_box(e.embed_ids(&ids).unwrap());
            }
        });
    }
    eprintln!("{:.1} sent/s", iters as f64 / t.elapsed().as_secs_f64());
}
