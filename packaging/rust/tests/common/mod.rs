//! Helpers of the binding's tests: reproducible random logits, the contract
//! computed independently, and a minimal CUDA driver client.
#![allow(dead_code)]

pub mod contract;
pub mod cuda;

use alphamoe_router::DeviceAttributes;
use std::time::{SystemTime, UNIX_EPOCH};

/// A device with an H100's attributes, made by hand: plans for it need no GPU.
pub const H100: DeviceAttributes = DeviceAttributes {
    compute_capability: 90,
    multiprocessor_count: 132,
    cooperative_ctas_per_sm: 1,
    cooperative_launch: true,
    max_cluster_ctas: 16,
};

/// splitmix64: reproducible from the printed seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// $ALPHAMOE_TEST_SEED, else the clock; printed so a failure replays.
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("ALPHAMOE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1));
    println!("{}: seed {} (ALPHAMOE_TEST_SEED={} replays it)", test, seed, seed);
    seed
}

/// Rows of random logits: most uniform in [-8, 8), some with heavy ties
/// (-0.0 and +0.0 among them) and some mixing NaN and infinities.
pub fn random_logits(rng: &mut Rng, m: usize, e: usize) -> Vec<f32> {
    let mut logits = vec![0.0f32; m * e];
    for row in logits.chunks_mut(e) {
        match rng.below(8) {
            0 => row.iter_mut().for_each(|x| *x = [-0.0, 0.0, 1.0, -1.0][rng.below(4) as usize]),
            1 => row.iter_mut().for_each(|x| {
                *x = match rng.below(6) {
                    0 => f32::NAN,
                    1 => f32::INFINITY,
                    2 => f32::NEG_INFINITY,
                    _ => rng.uniform(-8.0, 8.0),
                }
            }),
            _ => row.iter_mut().for_each(|x| *x = rng.uniform(-8.0, 8.0)),
        }
    }
    logits
}
