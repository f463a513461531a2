"""Decodes OTLP trace export requests with the official protobuf
definitions (PyPI opentelemetry-proto, generated from
open-telemetry/opentelemetry-proto): each argument is a file holding one
request body; the first argument is the protocol, `protobuf` or `json`.
Prints one JSON object: the spans of every request, flattened, with
hex ids, attributes as {key: value}, and their resource attributes."""

import base64
import json
import sys

from google.protobuf.json_format import Parse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    if kind is None:
        return None
    return getattr(any_value, kind)


def attributes(pairs):
    return {pair.key: value_of(pair.value) for pair in pairs}


ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def hex_ids_to_base64(node):
    if isinstance(node, dict):
        return {
            key: base64.b64encode(bytes.fromhex(value)).decode()
            if key in ID_FIELDS and isinstance(value, str)
            else hex_ids_to_base64(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [hex_ids_to_base64(item) for item in node]
    return node


def main():
    protocol, paths = sys.argv[1], sys.argv[2:]
    spans = []
    resources = []
    for path in paths:
        data = open(path, "rb").read()
        request = ExportTraceServiceRequest()
        if protocol == "protobuf":
            request.ParseFromString(data)
        else:
            # OTLP/JSON is proto3's JSON mapping with the exceptions the
            # OTLP specification lists: trace and span ids are hex, not
            # base64, and enums are numbers.
            Parse(json.dumps(hex_ids_to_base64(json.loads(data))), request)
        for resource_spans in request.resource_spans:
            resources.append(attributes(resource_spans.resource.attributes))
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        {
                            "name": span.name,
                            "kind": span.kind,
                            "traceId": span.trace_id.hex(),
                            "spanId": span.span_id.hex(),
                            "parentSpanId": span.parent_span_id.hex(),
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                            "status": {"code": span.status.code, "message": span.status.message},
                            "attributes": attributes(span.attributes),
                            "events": [
                                {"name": e.name, "attributes": attributes(e.attributes)}
                                for e in span.events
                            ],
                            "links": [l.span_id.hex() for l in span.links],
                        }
                    )
    json.dump({"spans": spans, "resources": resources}, sys.stdout)


if __name__ == "__main__":
    main()
