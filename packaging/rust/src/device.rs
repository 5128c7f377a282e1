//! Device-side buffers of `Router::route` and what the library knows about
//! kernels and devices.
use crate::ffi;
use crate::status::{Result, Status};
use std::ffi::CStr;
use std::mem::size_of;

/// Device addresses (`CUdeviceptr` values) of one call's outputs, and the
/// workspace. Optional outputs are 0 to skip them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceBuffers {
    pub topk_ids: u64,
    pub topk_weights: u64,
    pub sorted_token_ids: u64,
    /// Elements allocated at `sorted_token_ids`.
    pub sorted_token_ids_capacity: usize,
    pub expert_ids: u64,
    /// Elements allocated at `expert_ids`.
    pub expert_ids_capacity: usize,
    pub num_tokens_post_padded: u64,
    pub expert_counts: u64,
    pub expert_offsets: u64,
    pub pair_to_sorted: u64,
    /// Zeroed once after allocation, then reused by every call.
    pub workspace: u64,
    pub workspace_bytes: usize,
}

impl DeviceBuffers {
    pub(crate) fn raw(&self) -> ffi::alphamoe_buffers {
        let ptr = |address: u64| address as usize as *mut i32;
        ffi::alphamoe_buffers {
            struct_size: size_of::<ffi::alphamoe_buffers>(),
            topk_ids: ptr(self.topk_ids),
            topk_weights: self.topk_weights as usize as *mut f32,
            sorted_token_ids: ptr(self.sorted_token_ids),
            expert_ids: ptr(self.expert_ids),
            num_tokens_post_padded: ptr(self.num_tokens_post_padded),
            expert_counts: ptr(self.expert_counts),
            expert_offsets: ptr(self.expert_offsets),
            pair_to_sorted: ptr(self.pair_to_sorted),
            sorted_token_ids_capacity: i64::try_from(self.sorted_token_ids_capacity).unwrap_or(i64::MAX),
            expert_ids_capacity: i64::try_from(self.expert_ids_capacity).unwrap_or(i64::MAX),
            workspace: self.workspace as usize as *mut std::os::raw::c_void,
            workspace_bytes: self.workspace_bytes,
        }
    }
}

/// CUDA devices the driver sees; an error (`Status::NO_DRIVER`,
/// `Status::NO_DEVICE`) when there is no driver or no device.
pub fn device_count() -> Result<usize> {
    let mut count = 0i32;
    // SAFETY: a valid out pointer.
    Status(unsafe { ffi::alphamoe_device_count(&mut count) }).check()?;
    Ok(count.max(0) as usize)
}

/// Names of the kernels the library holds, e.g. "tiny_routed".
pub fn kernel_names() -> Vec<String> {
    (0..)
        .map_while(|i| {
            // SAFETY: NULL past the end, else a static string.
            let name = unsafe { ffi::alphamoe_kernel_name(i) };
            (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
        })
        .collect()
}

/// The architectures (90, 100, 103) of the images embedded for kernel `index`.
pub fn kernel_images(index: usize) -> Result<Vec<i32>> {
    let index = i32::try_from(index).unwrap_or(i32::MAX);
    let mut count = 0i32;
    // SAFETY: capacity 0 with a NULL array asks for the count only.
    Status(unsafe { ffi::alphamoe_kernel_images(index, std::ptr::null_mut(), 0, &mut count) }).check()?;
    let mut archs = vec![0i32; count.max(0) as usize];
    // SAFETY: archs holds `count` values.
    Status(unsafe { ffi::alphamoe_kernel_images(index, archs.as_mut_ptr(), count, &mut count) }).check()?;
    archs.truncate(count.max(0) as usize);
    Ok(archs)
}
