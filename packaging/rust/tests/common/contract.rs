//! The routing contract (docs/contract.md) computed here,
//! independently of the library, and compared with what a call wrote.
use alphamoe_router::{Params, Plan, FLAG_SHARED_EXPERT};

/// What every buffer holds before a call, to see what the call left untouched.
pub const POISON: i32 = 0x5A5A_5A5A;

/// One call's outputs, whole buffers where the contract says what lies
/// past the live part.
pub struct Outputs<'a> {
    pub topk_ids: &'a [i32],
    pub topk_weights: &'a [f32],
    pub sorted_token_ids: &'a [i32],
    pub expert_ids: &'a [i32],
    pub num_tokens_post_padded: i32,
    pub expert_counts: &'a [i32],
    pub expert_offsets: &'a [i32],
    pub pair_to_sorted: &'a [i32],
    /// The value every buffer held before the call: what lies past the live
    /// plan must still hold it.
    pub poison: Option<i32>,
}

/// The outputs of a host plan filled with POISON before the call.
pub fn host_outputs(plan: &Plan) -> Outputs<'_> {
    Outputs {
        topk_ids: plan.topk_ids(),
        topk_weights: plan.topk_weights(),
        sorted_token_ids: plan.sorted_token_ids_buffer(),
        expert_ids: plan.expert_ids_buffer(),
        num_tokens_post_padded: plan.num_tokens_post_padded() as i32,
        expert_counts: plan.expert_counts(),
        expert_offsets: plan.expert_offsets(),
        pair_to_sorted: plan.pair_to_sorted(),
        poison: Some(POISON),
    }
}

/// Expert `a` with logit `la` ranks before `b` with `lb`: higher logit
/// first, equal logits (-0.0 == +0.0) by lower id, NaN after every number.
fn ranks_before(la: f32, a: usize, lb: f32, b: usize) -> bool {
    match (la.is_nan(), lb.is_nan()) {
        (false, true) => true,
        (true, false) => false,
        (true, true) => a < b,
        (false, false) => la > lb || (la == lb && a < b),
    }
}

/// The token's experts, best first.
pub fn expected_ids(row: &[f32], top_k: usize, shared: bool) -> Vec<usize> {
    let routed = if shared { row.len() - 1 } else { row.len() };
    let mut order: Vec<usize> = (0..routed).collect();
    order.sort_by(|&a, &b| {
        if ranks_before(row[a], a, row[b], b) {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Greater
        }
    });
    let take = if shared { top_k - 1 } else { top_k };
    let mut ids: Vec<usize> = order[..take].to_vec();
    if shared {
        ids.push(row.len() - 1);
    }
    ids
}

/// Softmax over the chosen logits in f64 with the contract's rules for
/// NaN (weighs 0), +inf (the +inf ones share 1) and all -inf/NaN (all 0).
pub fn expected_weights(chosen: &[f32]) -> Vec<f64> {
    let pos_inf = chosen.iter().filter(|l| **l == f32::INFINITY).count();
    if pos_inf > 0 {
        return chosen.iter().map(|&l| if l == f32::INFINITY { 1.0 / pos_inf as f64 } else { 0.0 }).collect();
    }
    let finite: Vec<f64> = chosen.iter().filter(|l| l.is_finite()).map(|&l| l as f64).collect();
    if finite.is_empty() {
        return vec![0.0; chosen.len()];
    }
    let m = finite.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = finite.iter().map(|l| (l - m).exp()).sum();
    chosen.iter().map(|&l| if l.is_finite() { ((l as f64) - m).exp() / sum } else { 0.0 }).collect()
}

/// blocks = min(E, P) + floor((P - min(E, P)) / block_m), capacity = blocks * block_m.
pub fn expected_capacity(p: &Params) -> usize {
    let pairs = p.max_tokens * p.top_k;
    let first = p.num_experts.min(pairs);
    (first + (pairs - first) / p.block_m) * p.block_m
}

/// Every output of a call for `m` tokens against the contract; Err says
/// the first difference.
pub fn check(p: &Params, m: usize, logits: &[f32], out: &Outputs) -> Result<(), String> {
    let (e, k, bm) = (p.num_experts, p.top_k, p.block_m);
    let stride = if p.logits_row_stride == 0 { e } else { p.logits_row_stride };
    let shared = p.flags & FLAG_SHARED_EXPERT != 0;

    for t in 0..m {
        let row = &logits[t * stride..t * stride + e];
        let want = expected_ids(row, k, shared);
        let got: Vec<i32> = out.topk_ids[t * k..(t + 1) * k].to_vec();
        if got.iter().zip(&want).any(|(g, w)| *g != *w as i32) {
            return Err(format!("token {}: topk_ids {:?}, the contract ranks {:?}", t, got, want));
        }
        let chosen: Vec<f32> = want.iter().map(|&x| row[x]).collect();
        for (j, w) in expected_weights(&chosen).iter().enumerate() {
            let g = out.topk_weights[t * k + j];
            if !((g as f64) - w).abs().le(&4e-6) {
                return Err(format!("token {} slot {}: weight {} but softmax gives {} (tolerance 4e-6)", t, j, g, w));
            }
        }
    }

    check_plan(bm, m * k, e, |expert| Some(expert as usize), out)
}

/// The plan of `pairs` pairs over `local_experts` experts, from the call's
/// own topk_ids: `local` gives each global expert its local id (None: another
/// rank owns it). Err says the first difference.
pub fn check_plan(
    bm: usize,
    pairs: usize,
    local_experts: usize,
    local: impl Fn(i32) -> Option<usize>,
    out: &Outputs,
) -> Result<(), String> {
    let sentinel = pairs as i32;
    // Each local expert's pairs in ascending order, padded with the sentinel
    // to a multiple of block_m; groups in local expert order.
    let mut sorted = Vec::new();
    let mut blocks = Vec::new();
    let mut counts = vec![0i32; local_experts];
    let mut offsets = vec![0i32; local_experts + 1];
    let mut pair_to_sorted = vec![-1i32; pairs];
    for expert in 0..local_experts {
        offsets[expert] = sorted.len() as i32;
        for pair in 0..pairs {
            if local(out.topk_ids[pair]) == Some(expert) {
                pair_to_sorted[pair] = sorted.len() as i32;
                sorted.push(pair as i32);
                counts[expert] += 1;
            }
        }
        while sorted.len() % bm != 0 {
            sorted.push(sentinel);
        }
        blocks.resize(sorted.len() / bm, expert as i32);
    }
    offsets[local_experts] = sorted.len() as i32;
    let live = sorted.len();
    if out.num_tokens_post_padded != live as i32 {
        return Err(format!("num_tokens_post_padded {} but the groups take {}", out.num_tokens_post_padded, live));
    }
    if out.sorted_token_ids.len() < live || out.sorted_token_ids[..live] != sorted[..] {
        return Err(format!("sorted_token_ids differ from the grouped pairs (live length {})", live));
    }
    if out.expert_ids.len() < blocks.len() || out.expert_ids[..blocks.len()] != blocks[..] {
        return Err(format!("expert_ids differ from the experts of the {} blocks", blocks.len()));
    }
    if out.expert_counts != &counts[..] {
        return Err(format!("expert_counts {:?}, pairs per expert {:?}", out.expert_counts, counts));
    }
    if out.expert_offsets != &offsets[..] {
        return Err(format!("expert_offsets {:?}, group starts {:?}", out.expert_offsets, offsets));
    }
    if let Some(pair) = (0..pairs).find(|&p| out.pair_to_sorted[p] != pair_to_sorted[p]) {
        return Err(format!("pair_to_sorted[{}] = {}, expected {}", pair, out.pair_to_sorted[pair], pair_to_sorted[pair]));
    }
    if let Some(poison) = out.poison {
        if let Some(i) = out.sorted_token_ids[live..].iter().position(|&x| x != poison) {
            return Err(format!("sorted_token_ids[{}] past the live length {} was written", live + i, live));
        }
        if let Some(i) = out.expert_ids[blocks.len()..].iter().position(|&x| x != poison) {
            return Err(format!("expert_ids[{}] past the live blocks was written", blocks.len() + i));
        }
    }
    Ok(())
}
