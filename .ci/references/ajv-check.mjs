// Compiles JSON Schemas with Ajv 8 (draft 2020-12, `ajv/dist/2020`) in
// strict mode, formats from `ajv-formats`, and validates instances against
// them. Usage: ajv-check.mjs SCHEMA [INSTANCES.ndjson] — every schema given
// must compile; each line of the instances file (a JSON document per line)
// must be valid. Prints what failed and exits 1. (tests/it/schemas.rs)
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const [schemaPath, instancesPath] = process.argv.slice(2);
// strict: true makes every strict check (unknown formats and keywords,
// types, tuples, required) an error, not a logged warning.
const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats(ajv);
let validate;
try {
  validate = ajv.compile(JSON.parse(readFileSync(schemaPath, "utf8")));
} catch (error) {
  console.error(`${schemaPath}: does not compile: ${error.message}`);
  process.exit(1);
}
let invalid = 0;
if (instancesPath) {
  const lines = readFileSync(instancesPath, "utf8").split("\n").filter((l) => l.trim() !== "");
  lines.forEach((line, index) => {
    if (!validate(JSON.parse(line))) {
      invalid += 1;
      console.error(`${instancesPath}:${index + 1}: ${ajv.errorsText(validate.errors)}`);
    }
  });
  console.log(`${lines.length} instances, ${invalid} invalid`);
}
process.exit(invalid === 0 ? 0 : 1);
