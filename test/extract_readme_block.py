#!/usr/bin/env python3
"""Writes the fenced code block that follows `<!-- TAG -->` in README.md, so
the README's examples are compiled and run as they are written."""
import sys


def main() -> int:
    tag, readme, output = sys.argv[1], sys.argv[2], sys.argv[3]
    lines = open(readme).read().splitlines()
    try:
        start = lines.index(f'<!-- {tag} -->')
    except ValueError:
        sys.stderr.write(f'{readme}: no <!-- {tag} --> block\n')
        return 1
    body, inside = [], False
    for line in lines[start + 1:]:
        if line.startswith('```'):
            if inside:
                break
            inside = True
            continue
        if inside:
            body.append(line)
    with open(output, 'w') as f:
        f.write(f'/* From README.md, block "{tag}". */\n' + '\n'.join(body) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
