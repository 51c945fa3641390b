#!/usr/bin/env node
// `npx tabula serve …`: runs the tabula binary of this platform's package with the same
// arguments, standard streams and exit code, and passes SIGINT and SIGTERM on to it.
"use strict";
const { spawn } = require("node:child_process");
const { binaryPath } = require("..");

let bin;
try {
  bin = binaryPath();
} catch (err) {
  console.error(err.message);
  process.exit(1);
}
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => child.kill(sig));
}
child.on("exit", (code, signal) => {
  process.exitCode = code ?? (signal ? 1 : 0);
});
