// Reads SSE byte streams as a browser would: each stdin line is a JSON array
// of base64 chunks; each is decoded by TextDecoder (UTF-8, streaming, BOM
// dropped) and fed to npm `eventsource-parser`. Writes one JSON line per
// stream: its events and retries, in order. (tests/it/sse_property.rs)
import { createInterface } from "node:readline";
import { createParser } from "eventsource-parser";

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const said = [];
  const parser = createParser({
    onEvent: (event) =>
      said.push({ type: "event", event: event.event ?? null, id: event.id ?? null, data: event.data }),
    onRetry: (retry) => said.push({ type: "retry", retry }),
  });
  const decoder = new TextDecoder("utf-8");
  for (const chunk of JSON.parse(line)) {
    parser.feed(decoder.decode(Buffer.from(chunk, "base64"), { stream: true }));
  }
  parser.feed(decoder.decode());
  process.stdout.write(JSON.stringify(said) + "\n");
}
