// The launch plan: the one place that decides how a call runs. From the
// router, the call's token count and the device as the call's context sees
// it, plan_call picks the specialization, the kernel and its entry point,
// the grid, whether it launches as a cluster or cooperatively, and the
// per-call plan bits the kernel reads. alphamoe_route carries the plan out
// (launch.h); alphamoe_router_select returns it.
#ifndef ALPHAMOE_CAPI_PLAN_H
#define ALPHAMOE_CAPI_PLAN_H

#include <stdint.h>

#include "alphamoe/router_diagnostics.h"
#include "kernel_table.h"
#include "params.h"

namespace alphamoe {

struct LaunchPlan {
    alphamoe_specialization specialization;
    KernelId kernel;
    int32_t entry;           // the entry point (kernel_table.h)
    int32_t image_arch;
    int32_t grid_ctas;
    int32_t tokens_per_cta;  // a CTA's contiguous token range
    int32_t cluster_ctas;    // > 0: the grid is one thread-block cluster of this many CTAs
    bool cooperative;        // a co-resident grid launched cooperatively (not a cluster)
    uint32_t plan_bits;      // PlanBits, in RouteArgs::flags (kernels/route_args.h)
};

// Whether the kernels implement the router's parameters (validated and
// normalized); the CPU reference runs every valid set.
bool device_supports_flavour(const alphamoe_params &params);

// The plan of a call of num_tokens tokens. device: the attributes of the
// call's context (alphamoe_device_attributes; max_cluster_ctas 0 reads as
// the portable cluster size). A pure function.
alphamoe_status plan_call(const alphamoe_router &router, int32_t num_tokens,
                          const alphamoe_device_attributes &device, LaunchPlan *out);

// The plans that compute the same results as plan_call's on the same grid:
// plan_call's first, then every other entry point that can run the call
// (another variant, the flavoured kernel for a plain call). The
// benchmark times them (its entry-point table); the tests compare them.
// Writes at most capacity plans; returns how many there are.
int32_t plan_candidates(const LaunchPlan &chosen, const alphamoe_router &router, int32_t num_tokens,
                        LaunchPlan *out, int32_t capacity);

// The plan as alphamoe_router_select reports it.
alphamoe_selection selection_of(const LaunchPlan &plan);

// Whether two selections name the same plan (struct_size aside).
bool same_plan(const alphamoe_selection &a, const alphamoe_selection &b);

}  // namespace alphamoe

#endif
