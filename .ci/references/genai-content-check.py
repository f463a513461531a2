"""Checks captured GenAI content against the OpenTelemetry GenAI
conventions' JSON schemas, through the pydantic models Arize Phoenix
generates from them (phoenix.trace.gen_ai.__generated__.models: "Auto-
generated from open-telemetry/semantic-conventions-genai", named in its
header) — the models Phoenix itself validates spans with, dropping what
does not match. Run with Phoenix's own python (.ci/phoenix).

Reads one JSON object on stdin: {"system_instructions": [text, …],
"input_messages": [text, …], "output_messages": [text, …]}, each text an
attribute's value as exported. Every document must validate as its root
model, and every part whose type the schemas define must validate as that
part's own model (the schemas' discriminator): a bare union would take any
part as a GenericPart. Prints one line per document checked; exits 1 with
the errors on the first that does not validate."""

import json
import sys

from phoenix.trace.gen_ai.__generated__ import models

PARTS = {
    "text": models.TextPart,
    "tool_call": models.ToolCallRequestPart,
    "tool_call_response": models.ToolCallResponsePart,
    "reasoning": models.ReasoningPart,
}
ROOTS = {
    "system_instructions": models.SystemInstructions,
    "input_messages": models.InputMessages,
    "output_messages": models.OutputMessages,
}


def parts_of(kind, document):
    if kind == "system_instructions":
        return document
    return [part for message in document for part in message["parts"]]


def main():
    given = json.load(sys.stdin)
    checked = 0
    for kind, texts in given.items():
        root = ROOTS[kind]
        for text in texts:
            try:
                root.model_validate_json(text)
                for part in parts_of(kind, json.loads(text)):
                    model = PARTS.get(part.get("type"))
                    if model is not None:
                        model.model_validate(part)
            except Exception as error:  # pydantic's ValidationError, or bad JSON
                print(f"{kind}: {error}\n{text[:2000]}", file=sys.stderr)
                sys.exit(1)
            checked += 1
            print(f"{kind}: valid")
    if checked == 0:
        print("nothing to check", file=sys.stderr)
        sys.exit(1)


main()
