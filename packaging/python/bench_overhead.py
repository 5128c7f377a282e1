#!/usr/bin/env python3
"""Host time of one route() call from Python with torch tensors, and what
a CUDA graph replays.

  bench_overhead.py [--calls 10000] [--tokens 1,64,4096] [--json FILE] [--markdown FILE]

For each shape it times, per call on the host (time.perf_counter_ns over
batches of calls, the device synchronized between batches so the launch
queue never pushes back): route() (every output, extras=False, and into
the arrays of an earlier call with out=), the op path (torch_ops.route),
vllm.fused_topk, and as floors torch.empty of the same bytes and the
library's own launch with the buffers already made.
Then it captures one route() in a CUDA graph and reports the host time per
replay and the kernels a replay runs (torch.profiler: the router's kernel
and nothing else is the target).
"""
import argparse
import json
import statistics
import sys
import time

import torch

import alphamoe_router as amr
import alphamoe_router.torch_ops as torch_ops
from alphamoe_router import _arrays, vllm

MODELS = {'mixtral': (8, 2), 'deepseek-like': (64, 6), 'qwen3': (128, 8)}


def per_call_us(fn, calls, batch=500):
    """Median over batches of the mean host time of one call, in us."""
    fn()
    torch.cuda.synchronize()
    means = []
    done = 0
    while done < calls:
        n = min(batch, calls - done)
        start = time.perf_counter_ns()
        for _ in range(n):
            fn()
        means.append((time.perf_counter_ns() - start) / n / 1000)
        torch.cuda.synchronize()
        done += n
    return statistics.median(means), min(means)


def kernels_per_replay(graph, replays=20):
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            graph.replay()
        torch.cuda.synchronize()
    names = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            names[event.name] = names.get(event.name, 0) + 1
    return {name: count / replays for name, count in names.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--calls', type=int, default=10000)
    ap.add_argument('--tokens', default='1,64,4096')
    ap.add_argument('--json', help='write the results here too')
    ap.add_argument('--markdown', help='write the table here, for bench/doc_tables.py (docs/bindings.md)')
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print('SKIP: torch sees no CUDA device')
        return 77
    print(f'{torch.cuda.get_device_name()}, torch {torch.__version__}, library {amr.version()} '
          f'({amr.library_path()}), Python {sys.version.split()[0]}')
    results = []
    for model, (e, k) in MODELS.items():
        for m in (int(t) for t in args.tokens.split(',')):
            router = amr.Router(e, k, 16, m)
            x = torch.randn(m, e, device='cuda')
            hidden = torch.empty(m, 1, device='cuda')
            layout = _arrays._layout(router, m, True)
            buf = torch.empty(layout.total, dtype=torch.int32, device='cuda')
            stream = torch.cuda.current_stream().cuda_stream
            ws = _arrays._workspace(router, 0, stream)
            row = {'model': model, 'E': e, 'k': k, 'M': m}
            reused = amr.route(x, router)
            for name, fn in (
                    ('route', lambda: amr.route(x, router)),
                    ('route_no_extras', lambda: amr.route(x, router, extras=False)),
                    ('route_out', lambda: amr.route(x, router, out=reused)),
                    ('op', lambda: torch_ops.route(x, router)),
                    ('vllm_fused_topk', lambda: vllm.fused_topk(hidden, x, k, True)),
                    ('floor_torch_empty', lambda: torch.empty(layout.total, dtype=torch.int32, device='cuda')),
                    ('floor_library_launch', lambda: _arrays._launch(router, True, m, x.data_ptr(), buf.data_ptr(),
                                                                     layout.fields, ws, None, None, stream))):
                median, best = per_call_us(fn, args.calls)
                row[name + '_us'] = round(median, 2)
                row[name + '_best_us'] = round(best, 2)
            # One route() captured; a replay must run the router's kernel only.
            graph = torch.cuda.CUDAGraph()
            amr.route(x, router)
            with torch.cuda.graph(graph):
                amr.route(x, router)
            median, best = per_call_us(graph.replay, args.calls)
            row['graph_replay_us'] = round(median, 2)
            row['graph_kernels_per_replay'] = kernels_per_replay(graph)
            results.append(row)
            print(f"{model:14} E={e:3} k={k} M={m:5}: route {row['route_us']:6.2f} us "
                  f"(extras=False {row['route_no_extras_us']:.2f}, out= {row['route_out_us']:.2f}, "
                  f"op {row['op_us']:.2f}, "
                  f"vllm.fused_topk {row['vllm_fused_topk_us']:.2f}; floors: torch.empty "
                  f"{row['floor_torch_empty_us']:.2f}, library launch {row['floor_library_launch_us']:.2f}); "
                  f"graph replay {row['graph_replay_us']:.2f} us, kernels per replay "
                  f"{row['graph_kernels_per_replay']}", flush=True)
    seen = [r for r in results if r['graph_kernels_per_replay']]
    extra = [r for r in seen if len(r['graph_kernels_per_replay']) != 1
             or abs(sum(r['graph_kernels_per_replay'].values()) - 1) > 1e-9]
    under = {name: 'yes' if all(r[name + '_us'] < 10 for r in results) else 'NO' for name in ('route', 'route_out')}
    print(f"under 10 us per call: route() {under['route']}, route(out=) {under['route_out']}; graph replays "
          f"running exactly one kernel: "
          f"{'the profiler recorded no kernel of a replay' if not seen else 'yes' if not extra else 'NO'}")
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=1)
    if args.markdown:
        with open(args.markdown, 'w') as f:
            f.write(markdown(results, args.calls))
    return 0


def markdown(results, calls):
    """The table of docs/bindings.md, between the markers bench/doc_tables.py fills."""
    lines = ['<!-- alphamoe-bench:overhead -->',
             f'{torch.cuda.get_device_name()}, torch {torch.__version__}, Python {sys.version.split()[0]}, '
             f'library {amr.version()}: host microseconds per call, the median of batches over {calls} calls '
             '(the GPU synchronized between batches).', '',
             '| routing | E | k | M | route() | extras=False | out= | op | vllm.fused_topk | floor: torch.empty '
             '| floor: launch | graph replay | kernels a replay runs |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|']
    for r in results:
        kernels = ', '.join(f'{name} x{count:g}' for name, count in r['graph_kernels_per_replay'].items())
        lines.append(f"| {r['model']} | {r['E']} | {r['k']} | {r['M']} | {r['route_us']:.2f} | "
                     f"{r['route_no_extras_us']:.2f} | {r['route_out_us']:.2f} | {r['op_us']:.2f} | "
                     f"{r['vllm_fused_topk_us']:.2f} | {r['floor_torch_empty_us']:.2f} | "
                     f"{r['floor_library_launch_us']:.2f} | {r['graph_replay_us']:.2f} | {kernels or 'none recorded'} |")
    lines.append('<!-- /alphamoe-bench:overhead -->')
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    sys.exit(main())
