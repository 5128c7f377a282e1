//! Owned host buffers of one routed batch.
use crate::ffi;
use crate::router::{Inputs, Router};
use crate::status::{Error, Result};
use std::mem::size_of;

/// Every output of a call, in host memory, sized for a router's
/// `max_tokens`. The views return the part the last call wrote.
#[derive(Clone, Debug)]
pub struct Plan {
    top_k: usize,
    block_m: usize,
    local_experts: usize,
    num_tokens: usize,
    topk_ids: Vec<i32>,
    topk_weights: Vec<f32>,
    sorted_token_ids: Vec<i32>,
    expert_ids: Vec<i32>,
    num_tokens_post_padded: i32,
    expert_counts: Vec<i32>,
    expert_offsets: Vec<i32>,
    pair_to_sorted: Vec<i32>,
}

impl Plan {
    pub(crate) fn for_router(router: &Router) -> Plan {
        let p = router.params();
        let z = router.sizes();
        Plan {
            top_k: p.top_k,
            block_m: p.block_m,
            local_experts: z.expert_counts,
            num_tokens: 0,
            topk_ids: vec![0; z.topk_ids],
            topk_weights: vec![0.0; z.topk_weights],
            sorted_token_ids: vec![0; z.sorted_token_ids],
            expert_ids: vec![0; z.expert_ids],
            num_tokens_post_padded: 0,
            expert_counts: vec![0; z.expert_counts],
            expert_offsets: vec![0; z.expert_offsets],
            pair_to_sorted: vec![0; z.pair_to_sorted],
        }
    }

    /// Tokens of the last call.
    pub fn num_tokens(&self) -> usize {
        self.num_tokens
    }

    /// `[num_tokens, k]`, best expert first.
    pub fn topk_ids(&self) -> &[i32] {
        &self.topk_ids[..self.num_tokens * self.top_k]
    }

    /// `[num_tokens, k]`, the gate weights of the router's flavour.
    pub fn topk_weights(&self) -> &[f32] {
        &self.topk_weights[..self.num_tokens * self.top_k]
    }

    /// The live length of the plan.
    pub fn num_tokens_post_padded(&self) -> usize {
        self.num_tokens_post_padded.max(0) as usize
    }

    /// Pair indices `t * k + j` grouped by expert, each group padded with
    /// the sentinel `num_tokens * k` to a multiple of `block_m`.
    pub fn sorted_token_ids(&self) -> &[i32] {
        &self.sorted_token_ids[..self.num_tokens_post_padded().min(self.sorted_token_ids.len())]
    }

    /// The expert of each block of the live plan.
    pub fn expert_ids(&self) -> &[i32] {
        &self.expert_ids[..(self.num_tokens_post_padded() / self.block_m).min(self.expert_ids.len())]
    }

    /// Pairs per local expert, `[L]` (L = E without expert parallelism).
    pub fn expert_counts(&self) -> &[i32] {
        &self.expert_counts[..self.local_experts]
    }

    /// Group starts, `[L + 1]`; the last is the live length.
    pub fn expert_offsets(&self) -> &[i32] {
        &self.expert_offsets[..self.local_experts + 1]
    }

    /// Where each pair went in `sorted_token_ids`, `[num_tokens, k]`; -1 for
    /// a pair another rank owns.
    pub fn pair_to_sorted(&self) -> &[i32] {
        &self.pair_to_sorted[..self.num_tokens * self.top_k]
    }

    /// The whole `sorted_token_ids` buffer, capacity included.
    pub fn sorted_token_ids_buffer(&self) -> &[i32] {
        &self.sorted_token_ids
    }

    /// The whole `expert_ids` buffer, capacity included.
    pub fn expert_ids_buffer(&self) -> &[i32] {
        &self.expert_ids
    }

    /// Sets every element of every buffer (ids and counts to `id`, weights
    /// to `weight`), e.g. to see what a call leaves untouched.
    pub fn fill(&mut self, id: i32, weight: f32) {
        for v in [
            &mut self.topk_ids,
            &mut self.sorted_token_ids,
            &mut self.expert_ids,
            &mut self.expert_counts,
            &mut self.expert_offsets,
            &mut self.pair_to_sorted,
        ] {
            v.iter_mut().for_each(|x| *x = id);
        }
        self.topk_weights.iter_mut().for_each(|x| *x = weight);
        self.num_tokens_post_padded = id;
    }

    pub(crate) fn set_num_tokens(&mut self, num_tokens: usize) {
        self.num_tokens = num_tokens;
    }

    /// A plan made for another router may be too small for this one.
    pub(crate) fn check_fits(&self, router: &Router) -> Result<()> {
        let p = router.params();
        let z = router.sizes();
        let fits = self.topk_ids.len() >= z.topk_ids
            && self.topk_weights.len() >= z.topk_weights
            && self.sorted_token_ids.len() >= z.sorted_token_ids
            && self.expert_ids.len() >= z.expert_ids
            && self.expert_counts.len() >= z.expert_counts
            && self.expert_offsets.len() >= z.expert_offsets
            && self.pair_to_sorted.len() >= z.pair_to_sorted
            && self.top_k == p.top_k
            && self.block_m == p.block_m
            && self.local_experts == z.expert_counts;
        if fits {
            Ok(())
        } else {
            Err(Error::invalid_argument("the plan was made for another router".to_string()))
        }
    }

    pub(crate) fn raw_buffers(&mut self, inputs: &Inputs) -> ffi::alphamoe_buffers {
        ffi::alphamoe_buffers {
            struct_size: size_of::<ffi::alphamoe_buffers>(),
            topk_ids: self.topk_ids.as_mut_ptr(),
            topk_weights: self.topk_weights.as_mut_ptr(),
            sorted_token_ids: self.sorted_token_ids.as_mut_ptr(),
            expert_ids: self.expert_ids.as_mut_ptr(),
            num_tokens_post_padded: &mut self.num_tokens_post_padded,
            expert_counts: self.expert_counts.as_mut_ptr(),
            expert_offsets: self.expert_offsets.as_mut_ptr(),
            pair_to_sorted: self.pair_to_sorted.as_mut_ptr(),
            sorted_token_ids_capacity: self.sorted_token_ids.len() as i64,
            expert_ids_capacity: self.expert_ids.len() as i64,
            workspace: std::ptr::null_mut(),
            workspace_bytes: 0,
            correction_bias: inputs.correction_bias.map_or(std::ptr::null(), <[f32]>::as_ptr),
            expert_map: inputs.expert_map.map_or(std::ptr::null(), <[i32]>::as_ptr),
            token_ids: inputs.token_ids.map_or(std::ptr::null(), <[i32]>::as_ptr),
            hash_table: inputs.hash_table.map_or(std::ptr::null(), <[i32]>::as_ptr),
            logical_to_physical: inputs.logical_to_physical.map_or(std::ptr::null(), <[i32]>::as_ptr),
            replica_count: inputs.replica_count.map_or(std::ptr::null(), <[i32]>::as_ptr),
            // Cell<i32> has i32's layout; the cells let the library write through a shared slice.
            physical_load: inputs.physical_load.map_or(std::ptr::null_mut(), |l| l.as_ptr() as *mut i32),
        }
    }
}
