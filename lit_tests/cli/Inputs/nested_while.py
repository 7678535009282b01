"""Writes a graph of `while` loops nested DEPTH deep (argv[1]) to stdout, built as text so
that any depth is cheap to make: each level counts its s32 state down to 0 through the next."""
import sys

depth = int(sys.argv[1])
PARAM = '{"id": 0, "op": "parameter", "type": "s32", "shape": [], "attrs": {"index": 0}}'
COND = ('{"nodes": [' + PARAM + ', {"id": 1, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 0}}, '
        '{"id": 2, "op": "greater", "args": [0, 1], "type": "u8", "shape": []}], "outputs": [2]}')
OPEN = ('{"nodes": [' + PARAM + ', {"id": 1, "op": "while", "args": [0], "results": [{"type": "s32", "shape": []}], '
        '"regions": {"condition": ' + COND + ', "body": ')
CLOSE = ('}}, {"id": 2, "op": "elem", "args": [1], "type": "s32", "shape": [], "attrs": {"index": 0}}], '
         '"outputs": [2]}')
LEAF = ('{"nodes": [' + PARAM + ', {"id": 1, "op": "constant", "type": "s32", "shape": [], "attrs": {"value": 1}}, '
        '{"id": 2, "op": "subtract", "args": [0, 1], "type": "s32", "shape": []}], "outputs": [2]}')
text = OPEN * depth + LEAF + CLOSE * depth
sys.stdout.write('{"version": 1, "name": "nested", ' + text[1:] + "\n")
