// README.md's JavaScript, run by .ci/run in a fresh project where the README's install
// lines put @tabuladb/tabula beside @azure/data-tables. `node --test readme.test.mjs`.

// snippet: fake
import { test } from "node:test";
import assert from "node:assert/strict";
import { TableClient } from "@azure/data-tables";
import { fake } from "@tabuladb/tabula";

test("an order is stored", async (t) => {
  const f = await fake(); // a fresh, empty account of its own on one shared tabula serve
  t.after(() => f.stop()); // drops it, with its data
  const orders = TableClient.fromConnectionString(f.connectionString, "Orders", { allowInsecureConnection: true });
  await orders.createTable();
  await orders.createEntity({ partitionKey: "p1", rowKey: "1", total: 42 });
  assert.equal((await orders.getEntity("p1", "1")).total, 42);
});
// end snippet

test("first use: an SDK pointed at tabula serve", async (t) => {
  const f = await fake();
  t.after(() => f.stop());
  process.env.TABLES_CONNECTION_STRING = f.connectionString;
  // snippet: first-use
  const { TableServiceClient } = await import("@azure/data-tables");
  // What tabula serve printed; on port 10002, "UseDevelopmentStorage=true" does too.
  const svc = TableServiceClient.fromConnectionString(process.env.TABLES_CONNECTION_STRING, { allowInsecureConnection: true });
  await svc.createTable("Orders");
  // end snippet
  const names = [];
  for await (const table of svc.listTables()) names.push(table.name);
  assert.deepEqual(names, ["Orders"]);
});
