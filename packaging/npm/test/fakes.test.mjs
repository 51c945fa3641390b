// Run by .ci/run in a fresh project where the packed @tabuladb/tabula tarballs and
// @azure/data-tables were installed offline: each test gets its own fake through the
// package's API, and the fakes do not see each other's tables. `node --test`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { TableClient, TableServiceClient } from "@azure/data-tables";
import { fake, start } from "@tabuladb/tabula";

const insecure = { allowInsecureConnection: true };

async function tableNames(connectionString) {
  const names = [];
  for await (const t of TableServiceClient.fromConnectionString(connectionString, insecure).listTables()) names.push(t.name);
  return names.sort();
}

for (const who of ["first", "second"]) {
  test(`${who} test has a fake of its own`, async (t) => {
    const f = await fake();
    t.after(() => f.stop());
    assert.deepEqual(await tableNames(f.connectionString), [], "a fresh fake is empty");
    const orders = TableClient.fromConnectionString(f.connectionString, "Orders", insecure);
    await orders.createTable();
    await orders.createEntity({ partitionKey: who, rowKey: "1", total: 42 });
    const got = await orders.getEntity(who, "1");
    assert.equal(got.total, 42);
    assert.deepEqual(await tableNames(f.connectionString), ["Orders"]);
  });
}

test("fakes side by side are isolated", async (t) => {
  const [a, b] = await Promise.all([fake(), fake()]);
  t.after(() => Promise.all([a.stop(), b.stop()]));
  await TableClient.fromConnectionString(a.connectionString, "OnlyInA", insecure).createTable();
  assert.deepEqual(await tableNames(a.connectionString), ["OnlyInA"]);
  assert.deepEqual(await tableNames(b.connectionString), []);
});

test("start serves with extra flags and stops", async () => {
  const srv = await start({ args: ["--limits", "off"] });
  await TableClient.fromConnectionString(srv.connectionString, "Started", insecure).createTable();
  await srv.stop();
  assert.notEqual(srv.process.exitCode ?? srv.process.signalCode, null);
});

test("npx tabula runs the platform's binary", () => {
  const out = execFileSync("npx", ["--no-install", "tabula", "version"], { encoding: "utf8" });
  assert.match(out, /^tabula \S+ go\d/);
});
