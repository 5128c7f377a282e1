//! Every routing flavour through the crate: each field of `Params` reaches
//! the library (read back normalized, or refused with its own status), and
//! the CPU reference routes sigmoid scoring with groups and scaling, a
//! correction bias, bf16 and fp16 logits and both kinds of expert
//! parallelism as README's contract says; the plans of a hypothetical
//! device (the selection and its candidates) need no GPU either.
mod common;

use alphamoe_router::{
    DeviceAttributes, Inputs, Logits, LogitsType, Params, Plan, Router, Scoring, Selection, Specialization, Status,
    FLAG_CORRECTION_BIAS, FLAG_EXPERT_MAP, FLAG_NO_RENORMALIZE, FLAG_SHARED_EXPERT,
};
use common::contract::{self, host_outputs as outputs, POISON};
use common::{seed, Rng, H100};

fn uniform_logits(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.uniform(-6.0, 6.0)).collect()
}

fn route(router: &Router, m: usize, logits: Logits, inputs: &Inputs) -> Plan {
    let mut plan = router.plan();
    plan.fill(POISON, f32::from_bits(POISON as u32));
    router.route_host_with(m, logits, inputs, &mut plan).expect("route_host_with");
    plan
}

fn sigmoid(x: f32) -> f64 {
    1.0 / (1.0 + (-(x as f64)).exp())
}

#[test]
fn every_field_reaches_the_library() {
    let set = Params {
        logits_row_stride: 70,
        flags: FLAG_NO_RENORMALIZE | FLAG_CORRECTION_BIAS,
        force_specialization: Specialization::SMALL,
        scoring: Scoring::SIGMOID,
        logits_type: LogitsType::BF16,
        num_groups: 8,
        topk_groups: 3,
        routed_scaling_factor: 2.5,
        local_expert_begin: 16,
        local_expert_count: 24,
        ..Params::new(64, 6, 32, 100)
    };
    let router = Router::with_params(&set).expect("valid flavour");
    assert_eq!(router.params(), set);
    assert_eq!((router.sizes().expert_counts, router.sizes().expert_offsets), (24, 25));
    // Zeros read back normalized.
    let normalized = Router::with_params(&Params { scoring: Scoring::SIGMOID, ..Params::new(64, 6, 32, 100) })
        .unwrap()
        .params();
    assert_eq!(
        (normalized.logits_row_stride, normalized.num_groups, normalized.topk_groups),
        (64, 1, 1),
        "{:?}",
        normalized
    );
    assert_eq!((normalized.routed_scaling_factor, normalized.local_expert_count), (1.0, 64));

    let base = Params::new(64, 6, 32, 100);
    let refused = [
        (Params { scoring: Scoring(7), ..base }, Status::SCORING),
        (Params { flags: FLAG_CORRECTION_BIAS, ..base }, Status::SCORING),
        (Params { logits_type: LogitsType(9), ..base }, Status::LOGITS_TYPE),
        (Params { num_groups: 5, ..base }, Status::GROUPS),
        (Params { num_groups: 8, topk_groups: 9, ..base }, Status::GROUPS),
        (Params { routed_scaling_factor: -1.0, ..base }, Status::SCALING_FACTOR),
        (Params { routed_scaling_factor: f32::NAN, ..base }, Status::SCALING_FACTOR),
        (Params { local_expert_begin: 60, local_expert_count: 8, ..base }, Status::EXPERT_PARALLEL),
        (Params { flags: FLAG_EXPERT_MAP, ..base }, Status::EXPERT_PARALLEL),
        (Params { force_specialization: Specialization(9), ..base }, Status::SPECIALIZATION),
    ];
    for (params, status) in refused {
        let err = Router::with_params(&params).expect_err("an invalid flavour was accepted");
        assert_eq!(err.status(), status, "{:?}: {}", params, err);
        assert!(err.to_string().starts_with(status.name().unwrap()), "{}", err);
    }
}

/// Sigmoid scoring, groups ranked by their best logit, the best
/// `topk_groups` kept, weights renormalized (or not) and scaled.
#[test]
fn sigmoid_groups_and_scaling_follow_the_contract() {
    let seed = seed("sigmoid_groups_and_scaling_follow_the_contract");
    let mut rng = Rng::new(seed);
    let (e, k, groups, kept, m) = (64, 6, 8, 3, 37);
    for (flags, scale) in [(0, 2.5f32), (FLAG_NO_RENORMALIZE, 1.0)] {
        let params = Params {
            flags,
            scoring: Scoring::SIGMOID,
            num_groups: groups,
            topk_groups: kept,
            routed_scaling_factor: scale,
            ..Params::new(e, k, 8, m)
        };
        let router = Router::with_params(&params).unwrap();
        let logits = uniform_logits(&mut rng, m * e);
        let plan = route(&router, m, Logits::F32(&logits), &Inputs::default());
        let per_group = e / groups;
        for t in 0..m {
            let row = &logits[t * e..(t + 1) * e];
            let best = |g: usize| row[g * per_group..(g + 1) * per_group].iter().cloned().fold(f32::MIN, f32::max);
            let mut order: Vec<usize> = (0..groups).collect();
            order.sort_by(|&a, &b| best(b).partial_cmp(&best(a)).unwrap().then(a.cmp(&b)));
            let mut experts: Vec<usize> = (0..e).filter(|x| order[..kept].contains(&(x / per_group))).collect();
            experts.sort_by(|&a, &b| row[b].partial_cmp(&row[a]).unwrap().then(a.cmp(&b)));
            let want: Vec<i32> = experts[..k].iter().map(|&x| x as i32).collect();
            assert_eq!(&plan.topk_ids()[t * k..(t + 1) * k], &want[..], "token {}, seed {}", t, seed);
            let sum: f64 = want.iter().map(|&x| sigmoid(row[x as usize])).sum();
            for (j, &x) in want.iter().enumerate() {
                let u = sigmoid(row[x as usize]) / if flags == 0 { sum } else { 1.0 };
                let got = plan.topk_weights()[t * k + j] as f64;
                assert!((got - scale as f64 * u).abs() <= 4e-6 * scale.max(1.0) as f64, "token {} slot {}: {} vs {}, seed {}", t, j, got, scale as f64 * u, seed);
            }
        }
        contract::check_plan(8, m * k, e, |x| Some(x as usize), &outputs(&plan)).unwrap();
    }
}

/// A bias of +1 lifts its experts' keys above every unbiased score in (0, 1):
/// they are chosen, by their sigmoid, and the weights ignore the bias.
#[test]
fn correction_bias_steers_the_choice_only() {
    let seed = seed("correction_bias_steers_the_choice_only");
    let mut rng = Rng::new(seed);
    let (e, k, m) = (32, 4, 20);
    let params = Params { flags: FLAG_CORRECTION_BIAS, scoring: Scoring::SIGMOID, ..Params::new(e, k, 4, m) };
    let router = Router::with_params(&params).unwrap();
    let logits = uniform_logits(&mut rng, m * e);
    let bias: Vec<f32> = (0..e).map(|x| if x % 3 == 1 { 1.0 } else { 0.0 }).collect();
    let plan = route(&router, m, Logits::F32(&logits), &Inputs { correction_bias: Some(&bias), ..Default::default() });
    for t in 0..m {
        let row = &logits[t * e..(t + 1) * e];
        let ids = &plan.topk_ids()[t * k..(t + 1) * k];
        let lifted_out = (0..e).filter(|&x| bias[x] > 0.0 && !ids.contains(&(x as i32)));
        for x in ids.iter().map(|&x| x as usize) {
            assert!(bias[x] > 0.0, "token {}: expert {} has no bias but was chosen, seed {}", t, x, seed);
        }
        for other in lifted_out {
            let worst = ids.iter().map(|&x| sigmoid(row[x as usize])).fold(f64::MAX, f64::min);
            // fl(s + 1) keeps s to 2^-23: a closer pair may go either way.
            assert!(sigmoid(row[other]) <= worst + 2e-7, "token {}: expert {} ranks below the chosen, seed {}", t, other, seed);
        }
        let sum: f64 = ids.iter().map(|&x| sigmoid(row[x as usize])).sum();
        for (j, &x) in ids.iter().enumerate() {
            let want = sigmoid(row[x as usize]) / sum;
            assert!((plan.topk_weights()[t * k + j] as f64 - want).abs() <= 4e-6, "token {} slot {}, seed {}", t, j, seed);
        }
    }
    // Without the bias the flagged router refuses the call.
    let mut empty = router.plan();
    let err = router.route_host_with(m, Logits::F32(&logits), &Inputs::default(), &mut empty).unwrap_err();
    assert_eq!(err.status(), Status::NULL_POINTER, "{}", err);
}

/// bf16 and fp16 logits route exactly as fp32 logits of the same values.
#[test]
fn half_logits_route_as_their_fp32_values() {
    let seed = seed("half_logits_route_as_their_fp32_values");
    let mut rng = Rng::new(seed);
    let (e, k, m) = (48, 5, 30);
    let f32_router = Router::new(e, k, 16, m).unwrap();
    let bf16: Vec<u16> = (0..m * e).map(|_| (rng.uniform(-6.0, 6.0).to_bits() >> 16) as u16).collect();
    // Finite fp16 values: any sign, exponent field 0..30, any mantissa.
    let f16: Vec<u16> = (0..m * e).map(|_| (rng.next() as u16 & 0x83ff) | ((rng.below(31) as u16) << 10)).collect();
    let cases: [(LogitsType, Logits, Vec<f32>); 2] = [
        (LogitsType::BF16, Logits::Bf16(&bf16), bf16.iter().map(|&b| f32::from_bits((b as u32) << 16)).collect()),
        (LogitsType::F16, Logits::F16(&f16), f16.iter().map(|&h| f16_value(h)).collect()),
    ];
    for (logits_type, half, widened) in cases {
        let params = Params { logits_type, ..Params::new(e, k, 16, m) };
        let router = Router::with_params(&params).unwrap();
        let plan = route(&router, m, half, &Inputs::default());
        let reference = route(&f32_router, m, Logits::F32(&widened), &Inputs::default());
        contract::check(&Params::new(e, k, 16, m), m, &widened, &outputs(&reference)).unwrap();
        assert_eq!(plan.topk_ids(), reference.topk_ids(), "{:?}, seed {}", logits_type, seed);
        let bits = |w: &[f32]| w.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(plan.topk_weights()), bits(reference.topk_weights()), "{:?}, seed {}", logits_type, seed);
        assert_eq!(plan.sorted_token_ids(), reference.sorted_token_ids());
        // The router takes its own type only.
        let err = router.route_host(m, &widened).unwrap_err();
        assert_eq!(err.status(), Status::LOGITS_TYPE, "{}", err);
    }
}

/// IEEE binary16 bits to the fp32 of the same value.
fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = ((h >> 10) & 0x1f) as i32;
    let mantissa = (h & 0x3ff) as f32;
    sign * match exponent {
        0 => mantissa * 2f32.powi(-24),
        31 if mantissa == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        _ => (1024.0 + mantissa) * 2f32.powi(exponent - 25),
    }
}

/// A local range and a map: ids and weights as without expert parallelism,
/// the plan over the local experts in local ids.
#[test]
fn expert_parallelism_plans_the_local_experts() {
    let seed = seed("expert_parallelism_plans_the_local_experts");
    let mut rng = Rng::new(seed);
    let (e, k, bm, m) = (40, 4, 8, 25);
    let logits = uniform_logits(&mut rng, m * e);
    let full = route(&Router::new(e, k, bm, m).unwrap(), m, Logits::F32(&logits), &Inputs::default());
    let map: Vec<i32> = (0..e).map(|_| rng.below(14) as i32 - 2).collect(); // -2..=11 over L = 10
    let cases = [
        (Params { local_expert_begin: 12, local_expert_count: 10, ..Params::new(e, k, bm, m) }, None),
        (Params { flags: FLAG_EXPERT_MAP, local_expert_count: 10, ..Params::new(e, k, bm, m) }, Some(&map[..])),
    ];
    for (params, expert_map) in cases {
        let router = Router::with_params(&params).unwrap();
        assert_eq!(router.sizes().expert_counts, 10);
        let plan = route(&router, m, Logits::F32(&logits), &Inputs { expert_map, ..Default::default() });
        assert_eq!(plan.topk_ids(), full.topk_ids(), "seed {}", seed);
        assert_eq!(plan.topk_weights(), full.topk_weights(), "seed {}", seed);
        let local = |g: i32| -> Option<usize> {
            let l = match expert_map {
                Some(map) => map[g as usize],
                None => g - params.local_expert_begin as i32,
            };
            (0..10).contains(&l).then(|| l as usize)
        };
        if let Err(why) = contract::check_plan(bm, m * k, 10, local, &outputs(&plan)) {
            panic!("{:?}, seed {}: {}", params, seed, why);
        }
    }
    // A map of another length is refused before the call.
    let router = Router::with_params(&cases[1].0).unwrap();
    let err = router
        .route_host_with(m, Logits::F32(&logits), &Inputs { expert_map: Some(&map[1..]), ..Default::default() }, &mut router.plan())
        .unwrap_err();
    assert_eq!(err.status(), Status::INVALID_ARGUMENT, "{}", err);
}

/// Logits of another shape are refused, never read as a shorter batch.
#[test]
fn logits_of_another_shape_are_refused() {
    let router = Router::with_params(&Params { logits_row_stride: 10, ..Params::new(8, 2, 4, 3) }).unwrap();
    for (m, len, ok) in [(3, 28, true), (3, 30, true), (2, 30, false), (3, 21, false), (0, 0, true), (0, 8, false)] {
        let logits = vec![0.5f32; len];
        let got = router.route_host(m, &logits);
        assert_eq!(got.is_ok(), ok, "{} tokens, {} values: {:?}", m, len, got.err());
        if let Err(err) = got {
            assert_eq!(err.status(), Status::INVALID_ARGUMENT, "{}", err);
        }
    }
}

/// The names of the kernel and the entry point a plan gives by index; the
/// entry point is one of its kernel's (the library names each after its
/// kernel, as router_diagnostics.h's examples show).
fn names_of(plan: &Selection) -> (String, String) {
    let kernel = alphamoe_router::kernel_names().get(plan.kernel_index).cloned();
    let entry = alphamoe_router::entry_point_names().get(plan.entry_point_index).cloned();
    let (kernel, entry) = match (kernel, entry) {
        (Some(kernel), Some(entry)) => (kernel, entry),
        _ => panic!("{:?} names no kernel or no entry point", plan),
    };
    assert!(entry.starts_with(&format!("alphamoe_{}_", kernel)), "{:?}: entry point {} of kernel {}", plan, entry, kernel);
    (kernel, entry)
}

/// The selection of a hypothetical device: a pure function of the
/// parameters and the attributes, honouring a forced specialization.
#[test]
fn selection_reports_every_field() {
    for forced in [Specialization::TINY, Specialization::SMALL, Specialization::LARGE] {
        let router = Router::with_params(&Params { force_specialization: forced, ..Params::new(128, 8, 16, 64) }).unwrap();
        let s = router.select(64, &H100).expect("select");
        assert_eq!(s.specialization, forced, "{:?}", s);
        assert_eq!(s.image_arch, 90, "{:?}", s);
        assert!(s.grid_ctas >= 1 && s.grid_ctas <= 132 && s.block_threads >= 32 && s.tokens_per_cta >= 1, "{:?}", s);
        assert!(s.cluster_ctas >= 0 && s.cluster_ctas <= 16 && (s.cluster_ctas == 0 || s.cooperative), "{:?}", s);
        let header_name = forced.name().unwrap().trim_start_matches("ALPHAMOE_SPECIALIZATION_").to_lowercase();
        assert_eq!(alphamoe_router::specialization_name(forced), Some(header_name.as_str()));
        let (kernel, _) = names_of(&s);
        assert!(kernel.starts_with(&format!("{}_", header_name)), "{:?} runs kernel {}", forced, kernel);
    }
    assert_eq!(alphamoe_router::specialization_name(Specialization(9)), None);
}

/// A cluster never holds more CTAs than the device's largest; 0 reads as 8.
#[test]
fn clusters_fit_the_device() {
    let router =
        Router::with_params(&Params { force_specialization: Specialization::SMALL, ..Params::new(128, 8, 16, 64) }).unwrap();
    for max_cluster_ctas in [1, 8, 16] {
        let s = router.select(64, &DeviceAttributes { max_cluster_ctas, ..H100 }).unwrap();
        assert!(s.cluster_ctas <= max_cluster_ctas, "largest cluster {}: {:?}", max_cluster_ctas, s);
    }
    let unset = router.select(64, &DeviceAttributes { max_cluster_ctas: 0, ..H100 }).unwrap();
    assert_eq!(unset, router.select(64, &DeviceAttributes { max_cluster_ctas: 8, ..H100 }).unwrap());
}

/// The candidates of a call: the selection first, then other entry points
/// on the same grid, each once; a plain call can also run on the flavoured
/// kernel, a flavoured one only there.
#[test]
fn candidates_run_the_selected_grid() {
    let plain = Params::new(128, 8, 16, 4096);
    let cases = [
        (plain, 1),
        (plain, 64),
        (plain, 300),
        (plain, 4096),
        (Params { flags: FLAG_SHARED_EXPERT, ..plain }, 64),
        (Params { scoring: Scoring::SIGMOID, num_groups: 8, topk_groups: 4, ..plain }, 300),
        (Params { logits_type: LogitsType::BF16, ..plain }, 300),
    ];
    for (params, m) in cases {
        let router = Router::with_params(&params).unwrap();
        let selected = router.select(m, &H100).unwrap();
        let candidates = router.candidates(m, &H100).expect("candidates");
        assert_eq!(candidates.first(), Some(&selected), "{:?}, M = {}: {:?}", params, m, candidates);
        let mut entries: Vec<usize> = candidates.iter().map(|c| c.entry_point_index).collect();
        entries.sort_unstable();
        entries.dedup();
        assert_eq!(entries.len(), candidates.len(), "an entry point twice: {:?}", candidates);
        let mut kernels = Vec::new();
        for c in &candidates {
            let grid = |s: &Selection| {
                (s.specialization, s.grid_ctas, s.block_threads, s.cooperative, s.image_arch, s.tokens_per_cta, s.cluster_ctas)
            };
            assert_eq!(grid(c), grid(&selected), "{:?}, M = {}: a candidate on another grid", params, m);
            kernels.push(names_of(c).0);
        }
        let flavoured = kernels.iter().filter(|k| k.ends_with("_flavours")).count();
        if params.scoring == Scoring::SIGMOID {
            assert_eq!(flavoured, kernels.len(), "{:?}: kernels {:?}", params, kernels);
        } else if params.logits_type == LogitsType::F32 {
            assert!(flavoured >= 1 && flavoured < kernels.len(), "{:?}: kernels {:?}", params, kernels);
        }
    }
    // Refused as the selection refuses: groups the kernels do not
    // implement, too many tokens, a device without multiprocessors or image.
    let refused = [
        (Params { scoring: Scoring::SIGMOID, num_groups: 64, topk_groups: 4, ..Params::new(512, 8, 16, 64) }, 64, H100, Status::UNSUPPORTED_FLAVOUR),
        (plain, 4097, H100, Status::NUM_TOKENS),
        (plain, 64, DeviceAttributes { multiprocessor_count: 0, ..H100 }, Status::INVALID_ARGUMENT),
        (plain, 64, DeviceAttributes { compute_capability: 75, ..H100 }, Status::NO_IMAGE),
    ];
    for (params, m, device, status) in refused {
        let router = Router::with_params(&params).unwrap();
        let err = router.candidates(m, &device).expect_err("refused by the selection");
        assert_eq!(err.status(), status, "{:?}, M = {}, {:?}: {}", params, m, device, err);
        assert_eq!(router.select(m, &device).unwrap_err().status(), status);
    }
}

fn sqrt_softplus(x: f32) -> f64 {
    let x = x as f64;
    (if x > 0.0 { x + (-x).exp().ln_1p() } else { x.exp().ln_1p() }).sqrt()
}

/// DeepSeek-V4's routers: sqrt-softplus scores chosen with a bias and
/// weighted without it, and its hash layers, whose experts are each token's
/// row of a table (a token id outside the vocabulary or an entry outside
/// the experts: no expert, id -1, weight 0).
#[test]
fn sqrt_softplus_and_hash_routing() {
    let mut rng = Rng::new(seed("sqrt_softplus_and_hash_routing"));
    let (e, k, m) = (48usize, 6usize, 40usize);
    let logits = uniform_logits(&mut rng, m * e);
    let bias: Vec<f32> = (0..e).map(|_| rng.uniform(-0.5, 0.5)).collect();
    let biased = Params {
        flags: FLAG_CORRECTION_BIAS,
        scoring: Scoring::SQRT_SOFTPLUS,
        routed_scaling_factor: 1.5,
        ..Params::new(e, k, 8, m)
    };
    let router = Router::with_params(&biased).expect("sqrt-softplus with a bias");
    let plan = route(&router, m, Logits::F32(&logits), &Inputs { correction_bias: Some(&bias), ..Default::default() });
    for t in 0..m {
        let row = &logits[t * e..(t + 1) * e];
        let mut order: Vec<usize> = (0..e).collect();
        let key = |x: usize| sqrt_softplus(row[x]) as f32 + bias[x];
        order.sort_by(|&a, &b| key(b).partial_cmp(&key(a)).unwrap().then(a.cmp(&b)));
        let ids: Vec<i32> = order[..k].iter().map(|&x| x as i32).collect();
        assert_eq!(&plan.topk_ids()[t * k..(t + 1) * k], &ids[..], "token {}", t);
        let total: f64 = order[..k].iter().map(|&x| sqrt_softplus(row[x])).sum();
        for j in 0..k {
            let want = sqrt_softplus(row[order[j]]) / total * 1.5;
            assert!((plan.topk_weights()[t * k + j] as f64 - want).abs() <= 4e-6 * 1.5, "token {} slot {}", t, j);
        }
    }

    let vocab = 20usize;
    let hashed = Params {
        flags: alphamoe_router::FLAG_HASH_ROUTING,
        scoring: Scoring::SQRT_SOFTPLUS,
        vocab_size: vocab,
        ..Params::new(e, k, 8, m)
    };
    let router = Router::with_params(&hashed).expect("hash routing");
    assert_eq!(router.params().vocab_size, vocab);
    let mut table: Vec<i32> = (0..vocab * k).map(|_| (rng.next() % e as u64) as i32).collect();
    table[k + 2] = e as i32; // names no expert
    let token_ids: Vec<i32> = (0..m).map(|t| if t % 7 == 3 { vocab as i32 } else { (t % vocab) as i32 }).collect();
    let inputs = Inputs { token_ids: Some(&token_ids), hash_table: Some(&table), ..Default::default() };
    let plan = route(&router, m, Logits::F32(&logits), &inputs);
    for t in 0..m {
        let v = token_ids[t];
        let want: Vec<i32> = (0..k)
            .map(|j| if (v as usize) < vocab && (table[v as usize * k + j] as usize) < e { table[v as usize * k + j] } else { -1 })
            .collect();
        assert_eq!(&plan.topk_ids()[t * k..(t + 1) * k], &want[..], "token {}", t);
        let s: Vec<f64> = want.iter().map(|&x| if x >= 0 { sqrt_softplus(logits[t * e + x as usize]) } else { 0.0 }).collect();
        let total: f64 = s.iter().sum();
        for j in 0..k {
            let w = if total > 0.0 { s[j] / total } else { 0.0 };
            assert!((plan.topk_weights()[t * k + j] as f64 - w).abs() <= 4e-6, "token {} slot {}", t, j);
        }
    }
    // A vocabulary without the flag is refused with its own status.
    let err = Router::with_params(&Params { vocab_size: vocab, ..Params::new(e, k, 8, m) }).unwrap_err();
    assert_eq!(err.status(), Status::HASH_ROUTING);
}

/// Redundant experts (EPLB): pair p of logical expert x takes replica
/// p % replica_count[x], physical id logical_to_physical[x * R + replica];
/// a count outside [1, R] or an id outside [0, P) is a pair of no expert.
/// The weights are the unmapped call's, and physical_load gains one per
/// mapped pair.
#[test]
fn redundant_experts_map_pairs_to_replicas() {
    let seed = seed("redundant_experts_map_pairs_to_replicas");
    let mut rng = Rng::new(seed);
    let (e, k, p, r, m) = (24usize, 4usize, 40usize, 3usize, 30usize);
    let logits = uniform_logits(&mut rng, m * e);
    let plain = Router::with_params(&Params::new(e, k, 8, m)).expect("plain router");
    let base = route(&plain, m, Logits::F32(&logits), &Inputs::default());
    let params = Params {
        flags: alphamoe_router::FLAG_REDUNDANT_EXPERTS,
        num_physical_experts: p,
        replica_slots: r,
        ..Params::new(e, k, 8, m)
    };
    let router = Router::with_params(&params).expect("redundant experts");
    assert_eq!(router.params().local_expert_count, p);
    assert_eq!(router.sizes().expert_counts, p);
    let mut counts: Vec<i32> = (0..e).map(|_| 1 + (rng.next() % r as u64) as i32).collect();
    counts[5] = 0;
    counts[6] = r as i32 + 1;
    let mut table: Vec<i32> = (0..e * r).map(|_| (rng.next() % p as u64) as i32).collect();
    table[7 * r] = p as i32;
    counts[7] = 1;
    let mut load: Vec<i32> = (0..p).map(|_| 1 + (rng.next() % 100) as i32).collect();
    let mut want_load = load.clone();
    let cells = std::cell::Cell::from_mut(&mut load[..]).as_slice_of_cells();
    let inputs = Inputs {
        logical_to_physical: Some(&table),
        replica_count: Some(&counts),
        physical_load: Some(cells),
        ..Default::default()
    };
    let plan = route(&router, m, Logits::F32(&logits), &inputs);
    for pair in 0..m * k {
        let x = base.topk_ids()[pair] as usize;
        let c = counts[x];
        let q = if c >= 1 && c <= r as i32 { table[x * r + pair % c as usize] } else { -1 };
        let q = if q >= 0 && (q as usize) < p { q } else { -1 };
        if q >= 0 {
            want_load[q as usize] += 1;
        }
        assert_eq!(plan.topk_ids()[pair], q, "pair {} (seed {})", pair, seed);
        assert_eq!(plan.topk_weights()[pair].to_bits(), base.topk_weights()[pair].to_bits(), "pair {}", pair);
    }
    assert_eq!(load, want_load, "seed {}", seed);
    let err = Router::with_params(&Params { replica_slots: p + 1, ..params }).unwrap_err();
    assert_eq!(err.status(), Status::REDUNDANT_EXPERTS);
    let err = Router::with_params(&Params { num_physical_experts: p, ..Params::new(e, k, 8, m) }).unwrap_err();
    assert_eq!(err.status(), Status::REDUNDANT_EXPERTS);
}
