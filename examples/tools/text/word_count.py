"""Counts the words, lines and characters of a text, and its most frequent words.

A script tool of synapse-mcp: the arguments arrive as one JSON object on stdin, and the result
is one JSON object on stdout, checked against the output schema of word_count.tool.json.
"""

import collections
import json
import re
import sys

arguments = json.load(sys.stdin)
text = arguments["text"]
top = arguments.get("top", 5)
words = re.findall(r"\w+(?:['’]\w+)*", text.lower())
frequent = collections.Counter(words).most_common(top)
json.dump(
    {
        "words": len(words),
        "lines": len(text.splitlines()),
        "characters": len(text),
        "top": [{"word": word, "count": count} for word, count in frequent],
    },
    sys.stdout,
)
