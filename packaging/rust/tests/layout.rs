//! The raw structs of `ffi` lie out as the installed header's do: every
//! field at the header's offset (read from packaging/c/struct_layout.c
//! compiled against the header). A newer header may append fields; the
//! crate then knows a prefix and says so through struct_size.
use alphamoe_router::ffi;
use std::collections::HashMap;
use std::mem::{size_of, MaybeUninit};
use std::path::Path;
use std::process::Command;
use std::ptr::addr_of;

fn header_layout() -> Option<HashMap<String, usize>> {
    let cflags = Command::new("pkg-config").args(["--cflags", "alphamoe-router"]).output().ok()?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../c/struct_layout.c");
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("struct_layout");
    let flags = String::from_utf8(cflags.stdout).unwrap();
    let built = Command::new("cc").args(flags.split_whitespace()).arg(&source).arg("-o").arg(&exe).status().ok()?;
    assert!(built.success(), "cannot compile {}", source.display());
    let out = Command::new(&exe).output().expect("struct_layout runs");
    Some(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let (name, value) = l.split_once(' ').unwrap();
                (name.to_string(), value.parse().unwrap())
            })
            .collect(),
    )
}

macro_rules! check_struct {
    ($layout:expr, $ty:ident, [$($field:ident),*]) => {{
        let u = MaybeUninit::<ffi::$ty>::uninit();
        let base = u.as_ptr() as usize;
        $(
            // SAFETY: the address of a field of an uninitialized value, never read.
            let offset = unsafe { addr_of!((*u.as_ptr()).$field) } as usize - base;
            let name = concat!(stringify!($ty), ".", stringify!($field));
            assert_eq!(Some(&offset), $layout.get(name), "offset of {}", name);
        )*
        let size = size_of::<ffi::$ty>();
        assert!(size <= $layout[stringify!($ty)], "{} is {} bytes here, {} in the header", stringify!($ty), size, $layout[stringify!($ty)]);
    }};
}

#[test]
fn structs_match_the_installed_header() {
    let layout = match header_layout() {
        Some(layout) => layout,
        None => {
            println!("skipped: no cc or pkg-config to read the header's layout");
            return;
        }
    };
    check_struct!(layout, alphamoe_params, [struct_size, num_experts, top_k, block_m, max_tokens, logits_row_stride, flags, force_specialization]);
    check_struct!(layout, alphamoe_extent, [elements, bytes]);
    check_struct!(layout, alphamoe_sizes, [struct_size, topk_ids, topk_weights, sorted_token_ids, expert_ids, num_tokens_post_padded, expert_counts, expert_offsets, pair_to_sorted, workspace, workspace_alignment]);
    check_struct!(layout, alphamoe_buffers, [struct_size, topk_ids, topk_weights, sorted_token_ids, expert_ids, num_tokens_post_padded, expert_counts, expert_offsets, pair_to_sorted, sorted_token_ids_capacity, expert_ids_capacity, workspace, workspace_bytes]);
    check_struct!(layout, alphamoe_device_attributes, [struct_size, compute_capability, multiprocessor_count, cooperative_ctas_per_sm, cooperative_launch]);
    check_struct!(layout, alphamoe_selection, [struct_size, specialization, grid_ctas, block_threads, cooperative, image_arch, tokens_per_cta]);
}
