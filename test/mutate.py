#!/usr/bin/env python3
"""Mutation testing of the host code: plants each small bug of MUTATIONS,
one at a time, in a scratch copy of the tree, rebuilds what it changes and
runs the CPU suites (suite host), quickest first, until one fails: the
mutation is then killed. A mutation that no suite kills fails the run
unless ALLOWED_SURVIVORS names it, and so does an allowed survivor that
some suite now kills (take it off the list), a mutation whose text is not
in its file exactly once (the list must keep up with the code) and one
that does not compile.

    mutate.py --source DIR --build DIR --work DIR --gpu-archs 90a[,100a...]
              --nvcc PATH --toolkit-root DIR [--phase-clocks] [NAME...]

The scratch build (WORK/build, of WORK/src) is configured once and reused;
its kernels are not compiled: WORK/src/kernels/meson.build takes the
embedded images the build in --build made (BUILD/kernels/embedded_images.S).
Names on the command line run only those mutations. Prints one line a
mutation: what killed it and when, or that it survived.
"""
import argparse
import json
import os
import subprocess
import sys
import time

# (name, file, exact text, replacement). Each text must occur exactly once
# in its file. Keep the list growing with the code; when code moves, move
# the entry with it.
MUTATIONS = [
    # Bugs planted by an outside review, each once missed by every CPU test.
    ('workspace four bytes short', 'capi/params.cpp',
     'r->workspace_bytes = (bytes + 127) / 128 * 128;', 'r->workspace_bytes = (bytes + 127) / 128 * 128 - 4;'),
    ('the GPU claims every flavour', 'capi/plan.cpp',
     'return p.num_groups <= kMaxGpuGroups;', 'return true;'),
    ('the scaling factor is no flavour', 'capi/plan.cpp',
     'p.routed_scaling_factor != 1.0f || p.local_expert_count', 'p.local_expert_count'),
    ('launch capacity one short', 'capi/launch.cpp',
     'a.capacity = static_cast<int32_t>(router.capacity);', 'a.capacity = static_cast<int32_t>(router.capacity) - 1;'),
    ('tail fill dropped from the launch', 'capi/launch.cpp',
     'a.flags = p.flags & (kFlagTailFill | kFlagNoRenormalize', 'a.flags = p.flags & (kFlagNoRenormalize'),
    ('large takes over at 192 tokens', 'capi/plan.cpp',
     '{0, 16, 128, 256, kWarpsPerBlock / 2', '{0, 16, 192, 256, kWarpsPerBlock / 2'),
    ('padded group sizes in int32', 'capi/reference/plan.cpp',
     '(static_cast<int64_t>(count[l]) + bm - 1) / bm * bm', '(count[l] + bm - 1) / bm * bm'),
    # Validation and sizing.
    ('top_k one past its bound', 'capi/params.cpp',
     'if (p->top_k < 1 || p->top_k > max_k)', 'if (p->top_k < 1 || p->top_k > max_k + 1)'),
    ('capacity not tight', 'capi/params.cpp',
     'const int64_t blocks = nonempty + (pairs - nonempty) / block_m;',
     'const int64_t blocks = nonempty + pairs / block_m;'),
    ('workspace alignment of a word', 'capi/params.cpp',
     'misaligned(b->workspace, kWorkspaceAlignment)', 'misaligned(b->workspace, 4)'),
    ('expert_ids capacity one short accepted', 'capi/params.cpp',
     'b->expert_ids_capacity < router->capacity / p.block_m', 'b->expert_ids_capacity < router->capacity / p.block_m - 1'),
    ('a struct read past its size', 'capi/struct_io.h',
     'memcpy(out, in, in->struct_size < sizeof(T) ? in->struct_size : sizeof(T));', 'memcpy(out, in, sizeof(T));'),
    # Handles.
    ('every handle live', 'capi/params.cpp',
     'return router->magic == kRouterLive ? ALPHAMOE_OK : ALPHAMOE_ERROR_INVALID_HANDLE;', 'return ALPHAMOE_OK;'),
    ('destroy frees what it is given', 'capi/api.cpp',
     'if (check_router(router) != ALPHAMOE_OK) return;', 'if (router == nullptr) return;'),
    # The CPU reference.
    ('ties go to the later expert', 'capi/reference/topk.cpp',
     'if (held == n_select && key <= held_keys[held - 1]) continue;',
     'if (held == n_select && key < held_keys[held - 1]) continue;'),
    ('a NaN sigmoid weighs 1', 'capi/reference/scoring.cpp',
     'w[j] = isnan(s) ? 0.0 : static_cast<double>(s);', 'w[j] = isnan(s) ? 1.0 : static_cast<double>(s);'),
    ('weights unscaled', 'capi/reference/scoring.cpp',
     'static_cast<float>(fmin(w[j] * scale, FLT_MAX));', 'static_cast<float>(fmin(w[j], FLT_MAX));'),
    ('sqrt-softplus weights past the largest float', 'capi/reference/scoring.cpp',
     'static_cast<float>(fmin(w[j] * scale, FLT_MAX));', 'static_cast<float>(w[j] * scale);'),
    ('infinite sqrt-softplus scores divided by their sum', 'capi/reference/scoring.cpp',
     'w[j] = n_inf > 0 ? (w[j] == INFINITY ? 1.0 / n_inf : 0.0) : sum > 0.0 ? w[j] / sum : 0.0;',
     'w[j] = sum > 0.0 ? w[j] / sum : 0.0;'),
    ('sqrt-softplus keys by the sigmoid', 'capi/reference/scoring.cpp',
     'return p.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS ? alphamoe_sqrt_softplus(logit) : alphamoe_sigmoid(logit);',
     'return alphamoe_sigmoid(logit);'),
    ('hash routing with expert groups', 'capi/params.cpp',
     'if (p->vocab_size < 1 || p->num_groups > 1 ||', 'if (p->vocab_size < 1 ||'),
    ('a vocabulary without hash routing', 'capi/params.cpp',
     'return p->vocab_size == 0 ? ALPHAMOE_OK : ALPHAMOE_ERROR_HASH_ROUTING;', 'return ALPHAMOE_OK;'),
    ('reserved2 unchecked', 'capi/params.cpp',
     '(p->reserved != 0 || p->reserved2 != 0)', '(p->reserved != 0)'),
    ('no hash table asked for', 'capi/params.cpp',
     '(needs_table && (b->token_ids == nullptr || b->hash_table == nullptr))', '(needs_table && false)'),
    ('an unknown token reads row 0', 'capi/reference/topk.cpp',
     'const bool known = token_id >= 0 && token_id < p.vocab_size;', 'const bool known = token_id < p.vocab_size;'),
    ('a table entry past the experts kept', 'capi/reference/topk.cpp',
     'ids[j] = e >= 0 && e < p.num_experts ? e : -1;', 'ids[j] = e >= 0 ? e : -1;'),
    ('hash calls off the wide kernels', 'capi/plan.cpp',
     '(p.flags & (ALPHAMOE_FLAG_HASH_ROUTING | ALPHAMOE_FLAG_REDUNDANT_EXPERTS));',
     '(p.flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS);'),
    ('33 groups on the GPU', 'capi/plan.cpp',
     'return p.num_groups <= kMaxGpuGroups;', 'return p.num_groups <= kMaxGpuGroups + 1;'),
    # Redundant experts.
    ('replica slots one past P', 'capi/params.cpp', 'R < 1 || R > P)', 'R < 1 || R > P + 1)'),
    ('physical experts without the flag', 'capi/params.cpp',
     'return P == 0 && R == 0 ? ALPHAMOE_OK : ALPHAMOE_ERROR_REDUNDANT_EXPERTS;', 'return ALPHAMOE_OK;'),
    ('a local range over the logical experts', 'capi/params.cpp',
     'const int64_t E = routed_experts(*p);', 'const int64_t E = p->num_experts;'),
    ('no replica tables asked for', 'capi/params.cpp',
     '(needs_replicas && (b->logical_to_physical == nullptr || b->replica_count == nullptr))',
     '(needs_replicas && false)'),
    ('a replica count unchecked', 'capi/reference/plan.cpp',
     'if (c >= 1 && c <= R) q =', 'if (c >= 1) q ='),
    ('a replica count of R + 1 kept', 'capi/reference/plan.cpp',
     'if (c >= 1 && c <= R) q =', 'if (c >= 1 && c <= R + 1) q ='),
    ('physical id P kept', 'capi/reference/plan.cpp', 'if (q < 0 || q >= P) q = -1;', 'if (q < 0 || q > P) q = -1;'),
    ('the replica of the token, not the pair', 'capi/reference/plan.cpp',
     'static_cast<int64_t>(e) * R + pair % c]', 'static_cast<int64_t>(e) * R + pair / p.top_k % c]'),
    ('the load counts twice', 'capi/reference/plan.cpp',
     'static_cast<uint32_t>(b.physical_load[q]) + 1u', 'static_cast<uint32_t>(b.physical_load[q]) + 2u'),
    ('redundant-expert calls off the wide kernels', 'capi/plan.cpp',
     '(p.flags & (ALPHAMOE_FLAG_HASH_ROUTING | ALPHAMOE_FLAG_REDUNDANT_EXPERTS));',
     '(p.flags & ALPHAMOE_FLAG_HASH_ROUTING);'),
    ('the replica tables left out of the arguments', 'capi/launch.cpp',
     '        a.replica_count = b.replica_count;\n', ''),
    ('512 experts a wide call', 'capi/plan.cpp',
     'return p.num_experts > kMaxExperts || p.top_k > kMaxTopK ||', 'return p.num_experts >= kMaxExperts || p.top_k > kMaxTopK ||'),
    ('top-16 a wide call', 'capi/plan.cpp',
     'return p.num_experts > kMaxExperts || p.top_k > kMaxTopK ||', 'return p.num_experts > kMaxExperts || p.top_k >= kMaxTopK ||'),
    ('wide calls on rows of their width', 'capi/plan.cpp',
     '    if (c.wide && (c.width < kWideFirstRowWidth || c.hashed))\n        c.width = kWideFirstRowWidth;\n', ''),
    ('hash calls on rows of their experts', 'capi/plan.cpp',
     '(c.width < kWideFirstRowWidth || c.hashed)', 'c.width < kWideFirstRowWidth'),
    ('a wide grid of 256 CTAs', 'capi/plan.cpp',
     'const int32_t grid_limit = c.wide ? kWideMaxGridCtas : kMaxGridCtas;', 'const int32_t grid_limit = kMaxGridCtas;'),
    ('group sums over 513 plan experts', 'capi/plan.cpp',
     'p.local_expert_count <= kMaxExperts &&\n', 'p.local_expert_count <= kMaxExperts + 1 &&\n'),
    ('group sums in grids of one barrier', 'capi/plan.cpp',
     'if (plan.grid_ctas > kWideOneBarrierCtas && v != kVariant_token_ctas', 'if (plan.grid_ctas > 1 && v != kVariant_token_ctas'),
    ('group sums in token-CTA grids', 'capi/plan.cpp',
     'kWideOneBarrierCtas && v != kVariant_token_ctas &&', 'kWideOneBarrierCtas &&'),
    ('a wide large grid of 256 CTAs', 'capi/plan.cpp',
     'spread(tokens, c.wide && limit > kWideMaxGridCtas ? kWideMaxGridCtas : limit', 'spread(tokens, limit'),
    ('wide kernels without their shared memory', 'capi/device.cpp',
     '            entry.dynamic_smem = kWideSharedBytes;\n', ''),
    ('the sqrt-softplus flag left out of the arguments', 'capi/launch.cpp',
     'if (p.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS) a.flags |= kFlagSqrtSoftplus;', ''),
    ('a bias refused with sqrt-softplus', 'capi/params.cpp',
     '(p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS) && p->scoring == ALPHAMOE_SCORING_SOFTMAX',
     '(p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS) && p->scoring != ALPHAMOE_SCORING_SIGMOID'),
    ('tail blocks of expert 0', 'capi/reference/plan.cpp',
     'b.expert_ids[block] = -1;', 'b.expert_ids[block] = 0;'),
    ('expert_offsets[L] one short', 'capi/reference/plan.cpp',
     'if (b.expert_offsets) b.expert_offsets[L] = live_length;', 'if (b.expert_offsets) b.expert_offsets[L] = live_length - 1;'),
    # The launch plan.
    ('a grid of 8 CTAs not a cluster', 'capi/plan.cpp',
     'if (plan.grid_ctas <= cluster && plan.tokens_per_cta <= kMaxClusterCtaTokens && !c.wide)',
     'if (plan.grid_ctas < cluster && plan.tokens_per_cta <= kMaxClusterCtaTokens && !c.wide)'),
    ('a wide grid launched as a cluster', 'capi/plan.cpp',
     'plan.tokens_per_cta <= kMaxClusterCtaTokens && !c.wide)', 'plan.tokens_per_cta <= kMaxClusterCtaTokens)'),
    ('a small cluster of the portable size', 'capi/plan.cpp',
     'plan.cluster_ctas = plan.grid_ctas;', 'plan.cluster_ctas = cluster;'),
    ('one CTA takes one token', 'capi/plan.cpp',
     'plan.tokens_per_cta = tokens;', 'plan.tokens_per_cta = 1;'),
    ('a CTA a token for softmax routers', 'capi/plan.cpp',
     'c.num_tokens <= t.token_ctas_max_tokens && p.scoring != ALPHAMOE_SCORING_SOFTMAX &&',
     'c.num_tokens <= t.token_ctas_max_tokens &&'),
    ('candidates of wider rows', 'capi/plan.cpp',
     'if (e.width != c.width ||', 'if (e.width < c.width ||'),
    ('sqrt-softplus calls offered the other kernels', 'capi/plan.cpp',
     '    if (k.sqrt_softplus != c.sqrt_softplus) return false;\n', ''),
    ('sqrt-softplus calls on the sigmoid kernels', 'capi/plan.cpp',
     'return c.wide ? kRoutingWide : c.sqrt_softplus ? kRoutingSqrtSoftplus : kRoutingFlavours;',
     'return c.wide ? kRoutingWide : kRoutingFlavours;'),
    ('wide calls offered the narrow kernels', 'capi/plan.cpp',
     'if (e.width != c.width || k.wide != c.wide) return false;', 'if (e.width != c.width) return false;'),
    ('wide calls on the flavoured kernels', 'capi/plan.cpp',
     'return c.wide ? kRoutingWide : c.sqrt_softplus', 'return c.sqrt_softplus'),
    ('a token-CTA cluster beyond 8 offered to every entry point', 'capi/plan.cpp',
     'entry_serves(info, c) && entry_holds_grid(info, chosen))', 'entry_serves(info, c))'),
    ('the plan bits left out of the arguments', 'capi/launch.cpp',
     '    a.flags |= plan.plan_bits;\n', ''),
    ('staged pairs without the staged variant', 'capi/plan.cpp',
     'if ((v == kVariant_staged || v == kVariant_staged_half_logits) && stages_pairs(plan.tokens_per_cta, p, t))',
     'if (stages_pairs(plan.tokens_per_cta, p, t))'),
    ('token bits in the flavoured large kernel', 'capi/plan.cpp',
     '(!k.flavoured || (plan.specialization == ALPHAMOE_SPECIALIZATION_SMALL && !expert_map))',
     '(!k.flavoured || !expert_map)'),
    ('the one-token plan for two tokens', 'capi/plan.cpp',
     'if (few && c.num_tokens == 1) bits |= kPlanOneToken;', 'if (few && c.num_tokens <= 2) bits |= kPlanOneToken;'),
    ('the few-token plan over a local range', 'capi/plan.cpp',
     '(!expert_map && p.local_expert_count == p.num_experts)', '!expert_map'),
    ('token warps past their block_m', 'capi/plan.cpp',
     'p.block_m <= kTokenWarpsPlanMaxBlockM', 'p.block_m <= 2 * kTokenWarpsPlanMaxBlockM'),
    # The launch.
    ('PDL by the wrong flag', 'capi/launch.cpp',
     'if (router.params.flags & ALPHAMOE_FLAG_PDL) {', 'if (router.params.flags & ALPHAMOE_FLAG_TAIL_FILL) {'),
    ('the bias passed without its flag', 'capi/launch.cpp',
     'a.correction_bias = (p.flags & ALPHAMOE_FLAG_CORRECTION_BIAS) ? b.correction_bias : nullptr;',
     'a.correction_bias = b.correction_bias;'),
    ('a plan of another grid carried out', 'capi/plan.cpp',
     'a.specialization == b.specialization && a.grid_ctas == b.grid_ctas &&',
     'a.specialization == b.specialization &&'),
    ('occupancy overstated', 'capi/device.cpp',
     'a.cooperative_ctas_per_sm = min_occupancy;', 'a.cooperative_ctas_per_sm = min_occupancy + 1;'),
    # The driver and the images.
    ("the toolkit's stub library taken for a driver", 'capi/driver.cpp',
     'case CUDA_ERROR_STUB_LIBRARY: return ALPHAMOE_ERROR_NO_DRIVER;', 'case CUDA_ERROR_STUB_LIBRARY:'),
    ('archs alignment unchecked', 'capi/api.cpp',
     '% alignof(int32_t) != 0', '% 1 != 0'),
    ('a status message misnamed', 'capi/status.cpp',
     'return "ALPHAMOE_ERROR_INVALID_HANDLE: the router', 'return "ALPHAMOE_ERROR_INVALID_HANDLES: the router'),
]

# Mutations no CPU test is meant to kill, each with the reason.
ALLOWED_SURVIVORS = {
    # Where large takes over from small is performance only: both compute
    # the same plan. The benchmark's verdict on the GPU catches it.
    'large takes over at 192 tokens',
}

# Host tests that test no host library code: the arch gate of the build
# scripts, the meson registration of GPU cases, the Debian files.
NOT_RUN = {'arch_gate', 'gpu_cases_registered', 'debian_files'}

# Quickest first (the rest, new tests included, after them in meson's order).
ORDER = ['info', 'header_c99', 'exported_symbols', 'launch_h100', 'launch_partitioned', 'validation', 'fault_driver',
         'score_math', 'fuzz_corpus_replay', 'sizing', 'reference', 'divisor', 'int32_edges', 'flavours']

# What of the tree a scratch build reads.
COPIED = ['meson.build', 'meson_options.txt', 'README.md', 'include', 'capi', 'kernels', 'test', 'packaging',
          'tools', 'bench']
SKIPPED_DIRS = {'__pycache__', 'target', 'build-deb'}

KERNELS_STUB = """# The scratch build of test/mutate.py: the kernel images of another build.
embedded_images = files('embedded_images.S')
"""


def write_if_changed(path, data):
    """Writes data unless the file holds it already (its time then stays)."""
    try:
        with open(path, 'rb') as f:
            if f.read() == data:
                return
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(data)


def sync_tree(source, dest):
    """Makes dest's copy of the tree hold source's bytes; files already
    equal keep their times, so that the scratch build rebuilds only what
    changed (a mutation's file, from an earlier run, included)."""
    for top in COPIED:
        path = os.path.join(source, top)
        if os.path.isfile(path):
            write_if_changed(os.path.join(dest, top), open(path, 'rb').read())
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith('build')]
            for name in files:
                src = os.path.join(root, name)
                with open(src, 'rb') as f:
                    write_if_changed(os.path.join(dest, os.path.relpath(src, source)), f.read())


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors='replace', **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    ap.add_argument('--build', required=True, help='a build of --source whose kernels the scratch build takes')
    ap.add_argument('--work', required=True)
    ap.add_argument('--gpu-archs', required=True)
    ap.add_argument('--nvcc', required=True)
    ap.add_argument('--toolkit-root', required=True)
    ap.add_argument('--phase-clocks', action='store_true')
    ap.add_argument('names', nargs='*')
    args = ap.parse_args()
    started = time.monotonic()

    problems = []
    for name, path, text, _ in MUTATIONS:
        with open(os.path.join(args.source, path)) as f:
            found = f.read().count(text)
        if found != 1:
            problems.append(f'{name}: {path} holds its text {found} times, not once: update MUTATIONS')
    for name in ALLOWED_SURVIVORS:
        if name not in {m[0] for m in MUTATIONS}:
            problems.append(f'allowed survivor "{name}" is no mutation')
    if problems:
        print('\n'.join(problems))
        return 1
    selected = [m for m in MUTATIONS if not args.names or m[0] in args.names]

    src = os.path.join(args.work, 'src')
    build = os.path.join(args.work, 'build')
    sync_tree(args.source, src)
    write_if_changed(os.path.join(src, 'kernels', 'meson.build'), KERNELS_STUB.encode())
    with open(os.path.join(args.build, 'kernels', 'embedded_images.S'), 'rb') as f:
        write_if_changed(os.path.join(src, 'kernels', 'embedded_images.S'), f.read())
    if not os.path.exists(os.path.join(build, 'build.ninja')):
        setup = run(['meson', 'setup', build, src, '-Dgpu_archs=' + args.gpu_archs, '-Dtools=false',
                     '-Dnvcc=' + args.nvcc, '-Dtoolkit_root=' + args.toolkit_root,
                     '-Dphase_clocks=' + ('true' if args.phase_clocks else 'false')])
        if setup.returncode != 0:
            print(setup.stdout)
            return 1

    tests = json.loads(run(['meson', 'introspect', build, '--tests']).stdout)
    tests = [t for t in tests if any(s.split(':')[-1] == 'host' for s in t['suite']) and t['name'] not in NOT_RUN]
    rank = {name: i for i, name in enumerate(ORDER)}
    tests.sort(key=lambda t: rank.get(t['name'], len(ORDER)))
    targets_by_id = {t['id']: t['filename'] for t in json.loads(run(['meson', 'introspect', build, '--targets']).stdout)}
    targets = set()
    for t in tests:
        for dep in t['depends']:
            targets.update(os.path.relpath(f, build) for f in targets_by_id.get(dep, []))

    def build_all():
        return run(['ninja', '-C', build] + sorted(targets))

    def first_failure():
        """The first test that fails, or None; each test's command as meson runs it."""
        for t in tests:
            env = dict(os.environ, **(t.get('env') or {}))
            try:
                proc = run(t['cmd'], env=env, cwd=t.get('workdir') or build, timeout=t.get('timeout') or 600)
                failed = proc.returncode not in (0, 77)
            except subprocess.TimeoutExpired:
                failed = True
            if failed:
                return t['name']
        return None

    made = build_all()
    if made.returncode != 0:
        print(made.stdout[-4000:])
        print('the scratch build of the unmutated tree fails')
        return 1
    print(f'scratch build ready in {time.monotonic() - started:.0f} s; {len(selected)} mutations, '
          f'{len(tests)} host tests: {", ".join(t["name"] for t in tests)}', flush=True)

    killers = set()
    survived = False  # some mutation ran every test, and every test passed
    failures = []
    for name, path, text, replacement in selected:
        t0 = time.monotonic()
        target = os.path.join(src, path)
        with open(target) as f:
            original = f.read()
        try:
            with open(target, 'w') as f:
                f.write(original.replace(text, replacement))
            made = build_all()
            if made.returncode != 0:
                print(made.stdout[-3000:])
                failures.append(f'{name}: does not compile')
                verdict = 'DOES NOT COMPILE'
            else:
                killer = first_failure()
                if killer:
                    killers.add(killer)
                    verdict = f'killed by {killer}'
                    if name in ALLOWED_SURVIVORS:
                        failures.append(f'{name}: killed by {killer}, yet on the allowed survivors: take it off')
                elif name in ALLOWED_SURVIVORS:
                    verdict = 'survived (allowed)'
                    survived = True
                else:
                    verdict = 'SURVIVED'
                    survived = True
                    failures.append(f'{name}: survived every host test ({path})')
        finally:
            # A new time, so that the next build compiles the original again.
            with open(target, 'w') as f:
                f.write(original)
        print(f'{name:48s} {verdict} ({time.monotonic() - t0:.0f} s)', flush=True)

    # A test that fails in the scratch build kills every mutation and
    # proves nothing: every test passed with a mutation that none notices,
    # or the killers must pass without one.
    made = build_all()
    if made.returncode != 0:
        failures.append('the restored tree does not build')
    elif not survived:
        tests = [t for t in tests if t['name'] in killers]
        broken = first_failure()
        if broken:
            failures.append(f'{broken} fails without any mutation')
    for f in failures:
        print('FAIL: ' + f)
    print(f'{len(selected)} mutations, {len(failures)} failures, {time.monotonic() - started:.0f} s')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
