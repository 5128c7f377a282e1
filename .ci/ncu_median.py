#!/usr/bin/env python3
"""Median of the gpu__time_duration.sum values in `ncu --csv` output on stdin."""
import csv
import statistics
import sys

label = sys.argv[1]
rows = [r for r in csv.reader(sys.stdin) if len(r) > 3 and r[-3] == "gpu__time_duration.sum"]
values = sorted(float(r[-1].replace(",", "")) for r in rows)
if not values:
    print(label.ljust(34), "fail".rjust(10))
else:
    print(f"{label:<34} {statistics.median(values):10.2f} {rows[0][-2]} "
          f"(n={len(values)}, min {values[0]:.2f} max {values[-1]:.2f})")
