// The host reference's route plan: pairs grouped by local expert, each
// group padded to a multiple of block_m.
#ifndef ALPHAMOE_CAPI_REFERENCE_PLAN_H
#define ALPHAMOE_CAPI_REFERENCE_PLAN_H

#include <stdint.h>

#include "params.h"

namespace alphamoe {

// Local id of every routed expert (global, or physical with redundant
// experts) for this call, -1 for experts another rank owns: the identity without expert parallelism, g - begin inside a
// local range, else the expert map with every value outside [0, L) read
// as -1.
void local_expert_ids(const alphamoe_params &p, const int32_t *expert_map, int32_t *local_of);

// Redundant experts: replaces each pair's logical id in b.topk_ids by its
// replica's physical id (-1 where the tables name none) and counts the
// pairs in b.physical_load when given.
void map_to_replicas(const alphamoe_params &p, int32_t num_tokens, const alphamoe_buffers &b);

// Writes the plan of the pairs in b.topk_ids (M tokens) into b.
void write_plan(const alphamoe_router &router, int32_t num_tokens, const int32_t *local_of,
                const alphamoe_buffers &b);

}  // namespace alphamoe

#endif
