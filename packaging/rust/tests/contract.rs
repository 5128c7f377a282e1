//! The installed library through this crate: the CPU reference against the
//! routing contract computed here, bad input, the kernels and entry points
//! it names, and GPU routes (its own plan and every candidate) that either
//! match the reference or report that there is no driver or device.
mod common;

use alphamoe_router::{ffi, DeviceBuffers, Params, Router, Selection, Sizes, Status, FLAG_SHARED_EXPERT};
use common::contract::{self, host_outputs, Outputs, POISON};
use common::cuda::{self, Cuda, DeviceArray, Gpu};
use common::{random_logits, seed, Rng, H100};
use std::collections::BTreeSet;

/// (E, k, block_m, max_tokens, M, flags): routed and shared-expert, more
/// experts than pairs and the other way round, block_m 1 and large.
const CASES: &[(usize, usize, usize, usize, usize, u32)] = &[
    (8, 2, 4, 5, 5, 0),
    (64, 6, 16, 40, 33, 0),
    (512, 10, 8, 20, 17, 0),
    (16, 16, 1, 9, 9, 0),
    (128, 8, 64, 100, 100, FLAG_SHARED_EXPERT),
    (7, 3, 256, 3, 2, FLAG_SHARED_EXPERT),
];

#[test]
fn host_reference_follows_the_contract() {
    let seed = seed("host_reference_follows_the_contract");
    let mut rng = Rng::new(seed);
    for &(e, k, bm, max_tokens, m, flags) in CASES {
        let params = Params { flags, ..Params::new(e, k, bm, max_tokens) };
        let router = Router::with_params(&params).expect("valid parameters");
        let sizes = router.sizes();
        let capacity = contract::expected_capacity(&params);
        assert_eq!(sizes.sorted_token_ids, capacity, "capacity of {:?}", params);
        assert_eq!(sizes.expert_ids, capacity / bm, "expert_ids of {:?}", params);
        assert_eq!((sizes.topk_ids, sizes.topk_weights, sizes.pair_to_sorted), (max_tokens * k, max_tokens * k, max_tokens * k));
        assert_eq!((sizes.expert_counts, sizes.expert_offsets), (e, e + 1));

        let logits = random_logits(&mut rng, m, e);
        let mut plan = router.plan();
        plan.fill(POISON, f32::from_bits(POISON as u32));
        router.route_host_into(m, &logits, &mut plan).expect("route_host");
        if let Err(why) = contract::check(&params, m, &logits, &host_outputs(&plan)) {
            panic!("{:?}, M = {}, seed {}: {}", params, m, seed, why);
        }
        // A new plan from route_host holds the same result.
        let again = router.route_host(m, &logits).expect("route_host");
        assert_eq!(again.topk_ids(), plan.topk_ids());
        assert_eq!(again.sorted_token_ids(), plan.sorted_token_ids());
    }
}

#[test]
fn zero_tokens_give_an_empty_plan() {
    let router = Router::new(32, 4, 8, 16).unwrap();
    let mut plan = router.plan();
    plan.fill(POISON, 0.0);
    router.route_host_into(0, &[], &mut plan).unwrap();
    assert_eq!(plan.num_tokens_post_padded(), 0);
    assert!(plan.sorted_token_ids().is_empty() && plan.topk_ids().is_empty());
    assert!(plan.sorted_token_ids_buffer().iter().all(|&x| x == POISON), "M = 0 wrote into sorted_token_ids");
}

#[test]
fn bad_input_is_an_error_with_the_status_message() {
    let err = Router::new(64, 0, 16, 8).unwrap_err();
    assert_eq!(err.status(), Status::TOP_K);
    assert!(err.to_string().starts_with("ALPHAMOE_ERROR_TOP_K"), "message: {}", err);
    assert_eq!(Router::new(2049, 4, 16, 8).unwrap_err().status(), Status::NUM_EXPERTS);
    assert_eq!(Router::new(64, 4, 0, 8).unwrap_err().status(), Status::BLOCK_M);
    let shared = Params { flags: FLAG_SHARED_EXPERT, ..Params::new(64, 1, 16, 8) };
    assert_eq!(Router::with_params(&shared).unwrap_err().status(), Status::SHARED_EXPERT);

    let router = Router::new(64, 4, 16, 8).unwrap();
    let logits = vec![0.5f32; 9 * 64];
    let mut plan = router.plan();
    plan.fill(POISON, 0.0);
    let err = router.route_host_into(9, &logits, &mut plan).unwrap_err();
    assert_eq!(err.status(), Status::NUM_TOKENS, "{}", err);
    let err = router.route_host_into(2, &logits[..100], &mut plan).unwrap_err();
    assert_eq!(err.status(), Status::INVALID_ARGUMENT, "{}", err);
    assert!(plan.sorted_token_ids_buffer().iter().all(|&x| x == POISON), "a rejected call wrote");
    assert_eq!(plan.num_tokens_post_padded() as i32, POISON);
    // A plan of another router does not fit.
    let small = Router::new(64, 2, 16, 1).unwrap();
    assert_eq!(router.route_host_into(1, &logits, &mut small.plan()).unwrap_err().status(), Status::INVALID_ARGUMENT);
}

#[test]
fn version_and_kernels_are_reported() {
    let v = alphamoe_router::version();
    let parts: Vec<u32> = v.split('.').map(|p| p.parse().expect("numeric version")).collect();
    assert_eq!(parts.len(), 3, "version {}", v);
    assert_eq!(alphamoe_router::version_number(), parts[0] * 10000 + parts[1] * 100 + parts[2]);
    let names = alphamoe_router::kernel_names();
    // Three families, each routed-only and shared-expert, each once without
    // and once with the routing flavours, then each routed-only with
    // sqrt-softplus scoring, then the wide kernels of both modes, in the
    // header's order.
    let mut expected = Vec::new();
    for flavours in ["", "_flavours"] {
        for family in ["tiny", "small", "large"] {
            for mode in ["routed", "shared"] {
                expected.push(format!("{}_{}{}", family, mode, flavours));
            }
        }
    }
    for family in ["tiny", "small", "large"] {
        expected.push(format!("{}_routed_sqrt_softplus", family));
    }
    for family in ["tiny", "small", "large"] {
        for mode in ["routed", "shared"] {
            expected.push(format!("{}_{}_wide", family, mode));
        }
    }
    assert_eq!(names, expected);
    // SAFETY: no arguments, no state.
    assert_eq!(unsafe { ffi::alphamoe_kernel_count() }, 21);
    for (i, name) in names.iter().enumerate() {
        let archs = alphamoe_router::kernel_images(i).unwrap();
        assert!(!archs.is_empty() && archs.iter().all(|a| [90, 100, 103].contains(a)), "{}: {:?}", name, archs);
    }
}

#[test]
fn entry_points_are_named_once_each() {
    let names = alphamoe_router::entry_point_names();
    // SAFETY: no arguments, no state.
    let count = unsafe { ffi::alphamoe_entry_point_count() };
    assert_eq!(names.len() as i32, count, "{:?}", names);
    assert!(!names.is_empty() && names.iter().all(|n| !n.is_empty()), "{:?}", names);
    let unique: BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "an entry point named twice: {:?}", names);
    // SAFETY: indices outside the list give NULL, never a read past it.
    unsafe {
        assert!(ffi::alphamoe_entry_point_name(count).is_null());
        assert!(ffi::alphamoe_entry_point_name(-1).is_null());
    }
}

/// Device buffers of one call, every byte 0x5A (the workspace zeroed).
struct DeviceOutputs<'a> {
    arrays: Vec<DeviceArray<'a>>,
    buffers: DeviceBuffers,
}

impl<'a> DeviceOutputs<'a> {
    fn new(cuda: &'a Cuda, sizes: &Sizes) -> DeviceOutputs<'a> {
        let elements = [
            sizes.topk_ids,
            sizes.topk_weights,
            sizes.sorted_token_ids,
            sizes.expert_ids,
            1,
            sizes.expert_counts,
            sizes.expert_offsets,
            sizes.pair_to_sorted,
        ];
        let mut arrays: Vec<DeviceArray> = elements.iter().map(|n| cuda.alloc(n * 4, 0x5A)).collect();
        arrays.push(cuda.alloc(sizes.workspace_bytes, 0));
        let a = |i: usize| arrays[i].address;
        let buffers = DeviceBuffers {
            topk_ids: a(0),
            topk_weights: a(1),
            sorted_token_ids: a(2),
            sorted_token_ids_capacity: sizes.sorted_token_ids,
            expert_ids: a(3),
            expert_ids_capacity: sizes.expert_ids,
            num_tokens_post_padded: a(4),
            expert_counts: a(5),
            expert_offsets: a(6),
            pair_to_sorted: a(7),
            workspace: a(8),
            workspace_bytes: sizes.workspace_bytes,
            ..Default::default()
        };
        DeviceOutputs { arrays, buffers }
    }

    /// Every output, in the order of `new`.
    fn download(&self) -> (Vec<Vec<i32>>, Vec<f32>) {
        let ints = self.arrays[..8].iter().map(|a| a.download()).collect();
        (ints, self.arrays[1].download())
    }
}

#[test]
fn gpu_route_matches_the_reference_or_reports_no_gpu() {
    let seed = seed("gpu_route_matches_the_reference_or_reports_no_gpu");
    let mut rng = Rng::new(seed);
    let (e, k, bm, m) = (128, 8, 16, 300);
    let params = Params::new(e, k, bm, m);
    let router = Router::with_params(&params).unwrap();
    let sizes = router.sizes();
    let logits = random_logits(&mut rng, m, e);
    let host = router.route_host(m, &logits).unwrap();

    let cuda = match cuda::open() {
        Gpu::Ready(cuda) => cuda,
        Gpu::NoDriver(why) | Gpu::NoDevice(why) => {
            // The same calls with host memory where device memory would be:
            // the library must refuse before touching any of it.
            let mut ids = vec![POISON; sizes.topk_ids];
            let mut weights = vec![POISON; sizes.topk_weights];
            let mut sorted = vec![POISON; sizes.sorted_token_ids];
            let mut blocks = vec![POISON; sizes.expert_ids];
            let mut live = vec![POISON; 1];
            let mut workspace = vec![0u64; sizes.workspace_bytes / 8 + 1];
            let buffers = DeviceBuffers {
                topk_ids: ids.as_mut_ptr() as u64,
                topk_weights: weights.as_mut_ptr() as u64,
                sorted_token_ids: sorted.as_mut_ptr() as u64,
                sorted_token_ids_capacity: sorted.len(),
                expert_ids: blocks.as_mut_ptr() as u64,
                expert_ids_capacity: blocks.len(),
                num_tokens_post_padded: live.as_mut_ptr() as u64,
                workspace: workspace.as_mut_ptr() as u64,
                workspace_bytes: sizes.workspace_bytes,
                ..Default::default()
            };
            let plan = router.candidates(m, &H100).unwrap()[0];
            let address = logits.as_ptr() as u64;
            // SAFETY: without a driver the library launches nothing.
            let calls = unsafe {
                [
                    router.route(m, address, &buffers, std::ptr::null_mut()),
                    router.route_with_plan(m, address, &buffers, &plan, std::ptr::null_mut()),
                ]
            };
            for got in calls {
                let err = got.expect_err("a GPU route without a driver or device succeeded");
                assert!(
                    err.status() == Status::NO_DRIVER || err.status() == Status::NO_DEVICE,
                    "without a GPU ({}) the route said {}",
                    why,
                    err
                );
                println!("GPU part skipped: {}; the route call said \"{}\"", why, err);
            }
            assert!(ids.iter().chain(&sorted).chain(&blocks).chain(&live).chain(&weights).all(|&x| x == POISON));
            return;
        }
    };

    // The library's own plan, then every candidate of this device's.
    let device = alphamoe_router::device_attributes(0).expect("attributes of device 0");
    let candidates = router.candidates(m, &device).expect("candidates");
    let d_logits = cuda.upload(&logits);
    for plan in [None].into_iter().chain(candidates.iter().map(Some)) {
        let out = DeviceOutputs::new(&cuda, &sizes);
        // SAFETY: device buffers of the sizes the router gives, alive until
        // the synchronize below.
        unsafe {
            match plan {
                None => router.route(m, d_logits.address, &out.buffers, std::ptr::null_mut()),
                Some(plan) => router.route_with_plan(m, d_logits.address, &out.buffers, plan, std::ptr::null_mut()),
            }
        }
        .unwrap_or_else(|e| panic!("GPU route with {:?}: {}", plan, e));
        cuda.synchronize().expect("the route kernel failed");
        let (ints, weights) = out.download();
        let gpu = Outputs {
            topk_ids: &ints[0],
            topk_weights: &weights,
            sorted_token_ids: &ints[2],
            expert_ids: &ints[3],
            num_tokens_post_padded: ints[4][0],
            expert_counts: &ints[5],
            expert_offsets: &ints[6],
            pair_to_sorted: &ints[7],
            poison: Some(POISON),
        };
        if let Err(why) = contract::check(&params, m, &logits, &gpu) {
            panic!("GPU result with {:?}, seed {}: {}", plan, seed, why);
        }
        assert_eq!(gpu.topk_ids, host.topk_ids(), "GPU and CPU ids differ with {:?} (seed {})", plan, seed);
        let live = host.sorted_token_ids().len();
        assert_eq!(&gpu.sorted_token_ids[..live], host.sorted_token_ids(), "plans differ with {:?} (seed {})", plan, seed);
        assert_eq!(&gpu.expert_ids[..host.expert_ids().len()], host.expert_ids(), "expert_ids differ (seed {})", seed);
        assert_eq!(gpu.pair_to_sorted, host.pair_to_sorted(), "pair_to_sorted differs with {:?} (seed {})", plan, seed);
        println!("GPU route of {} tokens with {:?} matches the CPU reference", m, plan);
    }

    // A plan that is not a candidate is refused, nothing written.
    let entries = alphamoe_router::entry_point_names().len();
    let other = (0..entries).find(|i| candidates.iter().all(|c| c.entry_point_index != *i)).expect("an entry point not a candidate");
    let refused = Selection { entry_point_index: other, ..candidates[0] };
    let out = DeviceOutputs::new(&cuda, &sizes);
    // SAFETY: as above; a refused call launches nothing.
    let err = unsafe { router.route_with_plan(m, d_logits.address, &out.buffers, &refused, std::ptr::null_mut()) }
        .expect_err("a plan that is not a candidate ran");
    assert_eq!(err.status(), Status::INVALID_ARGUMENT, "{}", err);
    let (ints, _) = out.download();
    assert!(ints.iter().flatten().all(|&x| x == POISON), "a refused route wrote");
}
