// The helpers' path through the fresh-account API, against a stand-in that speaks only its
// contract (packaging/testdata/accounts-api-server.mjs, run as TABULA_BINARY): fake() asks
// the shared server for an account with the admin key it gave the server, and stop() drops
// it. Needs no install: `node --test packaging/npm/test/contract.test.mjs`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

process.env.TABULA_BINARY = fileURLToPath(new URL("../../testdata/accounts-api-server.mjs", import.meta.url));
const { fake, start } = createRequire(import.meta.url)("../tabula/index.js");

async function calls(endpoint) {
  return (await fetch(`${endpoint}/_contract/calls`)).json();
}

test("fake() takes a fresh account from the shared server and drops it on stop", async () => {
  const a = await fake();
  const b = await fake();
  assert.notEqual(a.accountName, b.accountName);
  assert.match(a.connectionString, new RegExp(`AccountName=${a.accountName};AccountKey=${a.accountKey.replace(/[+/=]/g, "\\$&")};`));
  const endpoint = /TableEndpoint=(http:\/\/[^/]+)\//.exec(a.connectionString)[1];
  await a.stop();
  await b.stop();
  const seen = (await calls(endpoint)).filter((c) => c.url.startsWith("/_tabula/"));
  assert.deepEqual(
    seen.map((c) => `${c.method} ${c.url}`),
    ["POST /_tabula/api/accounts", "POST /_tabula/api/accounts", `DELETE /_tabula/api/accounts/${a.accountName}`, `DELETE /_tabula/api/accounts/${b.accountName}`],
  );
  for (const c of seen) assert.match(c.authorization, /^Basic /);
  assert.equal(Buffer.from(seen[0].authorization.slice(6), "base64").toString().split(":")[0], "_tabula");
});

test("createAccount names the account when asked, with the server's admin key", async (t) => {
  const srv = await start({ adminKey: "the-admin-key" });
  t.after(() => srv.stop());
  const acct = await srv.createAccount("named");
  assert.equal(acct.name, "named");
  const [post] = await calls(srv.endpoint);
  assert.equal(post.body, '{"name":"named"}');
  assert.equal(post.authorization, "Basic " + Buffer.from("_tabula:the-admin-key").toString("base64"));
  await acct.delete();
});
