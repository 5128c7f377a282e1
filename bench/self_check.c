#include "self_check.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* What the header promises between alphamoe_route and alphamoe_route_host:
 * 4e-6, times the scaling factor when it exceeds 1. */
#define WEIGHT_TOLERANCE 4e-6

/* Index of the first difference, or -1. */
static int64_t first_difference(const int32_t *a, const int32_t *b, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return i;
    return -1;
}

/* Compares ids and plan bitwise; entries the contract leaves unwritten
 * (past the live length without tail fill) are not compared. Prints the
 * first mismatch. */
static bool ids_and_plan_equal(const session *s) {
    const output_set *r = &s->reference, *g = &s->gpu;
    const int64_t pairs = pair_count(s);
    const int32_t bm = s->params.block_m, E = plan_experts(s); /* the plan's experts */
    const bool tail = (s->params.flags & ALPHAMOE_FLAG_TAIL_FILL) != 0 && pairs > 0;
    const int64_t live = *r->num_tokens_post_padded;
    const int64_t sorted_n = tail ? s->sizes.sorted_token_ids.elements : live;
    const int64_t blocks_n = tail ? s->sizes.expert_ids.elements : live / bm;
    const struct {
        const char *name;
        const int32_t *ref, *got;
        int64_t n;
    } fields[] = {
        {"num_tokens_post_padded", r->num_tokens_post_padded, g->num_tokens_post_padded, 1},
        {"topk_ids", r->topk_ids, g->topk_ids, pairs},
        {"sorted_token_ids", r->sorted_token_ids, g->sorted_token_ids, sorted_n},
        {"expert_ids", r->expert_ids, g->expert_ids, blocks_n},
        {"expert_counts", r->expert_counts, g->expert_counts, pairs > 0 ? E : 0},
        {"expert_offsets", r->expert_offsets, g->expert_offsets, pairs > 0 ? E + 1 : 0},
    };
    for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); ++f) {
        const int64_t at = first_difference(fields[f].ref, fields[f].got, fields[f].n);
        if (at >= 0) {
            printf("                first difference: %s[%" PRId64 "] = %" PRId32 ", host reference %" PRId32 "\n",
                   fields[f].name, at, fields[f].got[at], fields[f].ref[at]);
            return false;
        }
    }
    return true;
}

static double max_weight_difference(const session *s) {
    double worst = 0.0;
    const int64_t pairs = pair_count(s);
    for (int64_t i = 0; i < pairs; ++i) {
        const double d = fabs((double)s->gpu.topk_weights[i] - (double)s->reference.topk_weights[i]);
        if (!(d <= worst)) worst = d; /* a NaN sticks */
    }
    return worst;
}

bool check_against_reference(const session *s) {
    const bool equal = ids_and_plan_equal(s);
    const double diff = max_weight_difference(s);
    const double scale = s->params.routed_scaling_factor;
    const double allowed = WEIGHT_TOLERANCE * (scale > 1.0 ? scale : 1.0);
    const bool weights_ok = diff <= allowed;
    printf("self-check:     ids and plan bitwise equal to alphamoe_route_host: %s;\n"
           "                max |weight - reference weight| = %.3g (allowed %.2g)\n",
           equal ? "yes" : "no", diff, allowed);
    printf("matches host reference: %s\n", equal && weights_ok ? "yes" : "no");
    return equal && weights_ok;
}
