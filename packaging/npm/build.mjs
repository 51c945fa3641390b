// Builds the npm packages from the release tool's binaries, esbuild's way: a main package,
// @tabuladb/tabula (the `tabula` command and the JS API), whose optional dependencies are
// one package per platform, each carrying that platform's binary and declaring its os and
// cpu, so that npm installs only the one that runs here.
//
//   go run ./packaging/release            # dist/bin/<os>_<arch>/tabula[.exe]
//   node packaging/npm/build.mjs [--version 1.2.3] [--dist dist] [--out dist/npm]
//
// writes each package's directory under --out and packs it there (npm pack) into a tarball.
// The version defaults to git describe, made a semver (v1.2.3 → 1.2.3; a commit c0ffee →
// 0.0.0-dev.gc0ffee). Standard library and npm only.

import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const { values } = parseArgs({
  options: {
    version: { type: "string" },
    dist: { type: "string", default: join(repo, "dist") },
    out: { type: "string" },
  },
});
values.dist = resolve(values.dist);
const out = resolve(values.out ?? join(values.dist, "npm"));

// The Go names of the release's platforms, and Node's.
const platforms = [
  ["linux", "amd64", "linux", "x64"],
  ["linux", "arm64", "linux", "arm64"],
  ["darwin", "amd64", "darwin", "x64"],
  ["darwin", "arm64", "darwin", "arm64"],
  ["windows", "amd64", "win32", "x64"],
  ["windows", "arm64", "win32", "arm64"],
];

export function semver(v) {
  const m = /^v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$/.exec(v);
  if (m) return m[1];
  return "0.0.0-dev.g" + v.replace(/^v/, "").replace(/[^0-9A-Za-z-]+/g, ".");
}

const version = semver(
  values.version ?? execFileSync("git", ["describe", "--tags", "--always", "--dirty"], { cwd: repo, encoding: "utf8" }).trim(),
);

function pack(dir) {
  const file = execFileSync("npm", ["pack", "--silent", "--pack-destination", out], { cwd: dir, encoding: "utf8" }).trim();
  console.log(join(out, file.split("\n").pop()));
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const main = JSON.parse(readFileSync(join(here, "tabula", "package.json"), "utf8"));
main.version = version;
main.optionalDependencies = {};
for (const [goos, goarch, os, cpu] of platforms) {
  const exe = goos === "windows" ? "tabula.exe" : "tabula";
  const bin = join(values.dist, "bin", `${goos}_${goarch}`, exe);
  const name = `@tabuladb/tabula-${os}-${cpu}`;
  main.optionalDependencies[name] = version;
  if (!existsSync(bin)) {
    console.error(`no ${bin}: ${name} is not built`);
    continue;
  }
  const dir = join(out, `tabula-${os}-${cpu}`);
  mkdirSync(join(dir, "bin"), { recursive: true });
  copyFileSync(bin, join(dir, "bin", exe));
  chmodSync(join(dir, "bin", exe), 0o755);
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify(
      {
        name,
        version,
        description: `The tabula binary for ${os} ${cpu}; installed by @tabuladb/tabula.`,
        license: main.license,
        os: [os],
        cpu: [cpu],
        files: [`bin/${exe}`],
        preferUnplugged: true,
      },
      null,
      2,
    ) + "\n",
  );
  writeFileSync(join(dir, "README.md"), `# ${name}\n\nThe tabula binary for ${os} ${cpu}. Install \`@tabuladb/tabula\`, which depends on it.\n`);
  pack(dir);
}
const dir = join(out, "tabula");
mkdirSync(join(dir, "bin"), { recursive: true });
for (const f of ["index.js", "index.d.ts", "README.md", "bin/tabula.js"]) copyFileSync(join(here, "tabula", f), join(dir, f));
chmodSync(join(dir, "bin", "tabula.js"), 0o755);
writeFileSync(join(dir, "package.json"), JSON.stringify(main, null, 2) + "\n");
pack(dir);
