// The JavaScript SDK suite: builds tabula, starts `tabula serve` on a free port with two
// accounts, and drives it with the official @azure/data-tables client through the common
// flows and every call issue 10 named (service properties and CORS, stats on the
// secondary, table ACLs and SAS under a stored policy, account isolation, ETags, failing
// transactions, paging past 1,000). Run with `npm ci && node suite.mjs` (see .ci/run).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import {
  AzureNamedKeyCredential,
  AzureSASCredential,
  TableClient,
  TableServiceClient,
  generateAccountSas,
  generateTableSas,
  odata,
} from "@azure/data-tables";

const devName = "devstoreaccount1";
const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const otherName = "jsother";
const otherKey = Buffer.from("the other account's key, 32 bytes").toString("base64");
const insecure = { allowInsecureConnection: true };

let proc, workdir, endpoint;

before(async () => {
  const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
  workdir = mkdtempSync(join(tmpdir(), "tabula-js-"));
  const bin = join(workdir, "tabula");
  execFileSync("go", ["build", "-o", bin, "./cmd/tabula"], { cwd: repo, stdio: "inherit" });
  proc = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--in-memory", "--accounts", `${devName}:${devKey};${otherName}:${otherKey}`], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  // The endpoint is the development account's TableEndpoint in the banner's connection
  // string, less the account; a server that prints none within a minute fails the suite.
  endpoint = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`no connection string in tabula's banner: ${out}`)), 60_000);
    proc.on("exit", (code) => reject(new Error(`tabula exited with ${code}: ${out}`)));
    proc.stdout.on("data", (chunk) => {
      out += chunk;
      const m = new RegExp(`TableEndpoint=(http://[^;\\s]+)/${devName}`).exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
});

after(() => {
  proc?.kill("SIGTERM");
  if (workdir) rmSync(workdir, { recursive: true, force: true });
});

const devCred = () => new AzureNamedKeyCredential(devName, devKey);
const service = (account = devName, key = devKey) =>
  new TableServiceClient(`${endpoint}/${account}/`, new AzureNamedKeyCredential(account, key), insecure);
const table = (name, account = devName, key = devKey) =>
  new TableClient(`${endpoint}/${account}/`, name, new AzureNamedKeyCredential(account, key), insecure);

// errorCode is the service's error code as the SDK surfaces it: RestError.code when the SDK
// fills it (transactions), else the odata.error in the details or the message.
function errorCode(err) {
  if (err.code) return err.code;
  if (err.details?.odataError?.code) return err.details.odataError.code;
  try {
    return JSON.parse(err.message)["odata.error"].code;
  } catch {
    // The XML operations (ACLs, service properties and stats) answer errors with the
    // service's XML m:error document, which the SDK leaves in the message.
    return /<m:code>(\w+)<\/m:code>/.exec(err.message)?.[1];
  }
}

async function rejectsWith(promise, status, code) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.statusCode, status, `status of ${err.message}`);
    if (code) assert.equal(errorCode(err), code, `code of ${err.message}`);
    return true;
  });
}

async function collect(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

test("tables: create, list, filter, delete", async () => {
  const svc = service();
  for (const name of ["JsAlpha", "JsBeta", "JsGamma"]) await svc.createTable(name);
  // The SDK's createTable hides TableAlreadyExists; the service still answers it.
  const raw = await fetch(`${endpoint}/${devName}/Tables?${generateAccountSas(devCred(), { permissions: { add: true, write: true }, resourceTypes: "sco", expiresOn: new Date(Date.now() + 3600_000) })}`, {
    method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify({ TableName: "JsAlpha" }),
  });
  assert.equal(raw.status, 409);
  assert.equal(raw.headers.get("x-ms-error-code"), "TableAlreadyExists");
  const names = (await collect(svc.listTables({ queryOptions: { filter: odata`TableName ge ${"Js"} and TableName lt ${"Jt"}` } }))).map((t) => t.name);
  assert.deepEqual(names, ["JsAlpha", "JsBeta", "JsGamma"]);
  await svc.deleteTable("JsBeta");
  await rejectsWith(table("JsBeta").getEntity("p", "r"), 404, "TableNotFound");
});

test("entities: CRUD, upserts, types, ETags", async () => {
  const t = table("JsEntities");
  await t.createTable();
  const created = await t.createEntity({ partitionKey: "p", rowKey: "r", name: "Ann", age: 42, big: { value: "9223372036854775807", type: "Int64" }, when: new Date("2021-07-13T01:02:03.450Z") });
  await rejectsWith(t.createEntity({ partitionKey: "p", rowKey: "r" }), 409, "EntityAlreadyExists");
  let e = await t.getEntity("p", "r");
  assert.equal(e.name, "Ann");
  assert.equal(e.age, 42);
  assert.equal(e.big, 9223372036854775807n);
  assert.equal(e.when.toISOString(), "2021-07-13T01:02:03.450Z");
  assert.equal(e.etag, created.etag);

  const merged = await t.updateEntity({ partitionKey: "p", rowKey: "r", age: 43 }, "Merge", { etag: e.etag });
  e = await t.getEntity("p", "r");
  assert.equal(e.name, "Ann");
  assert.equal(e.age, 43);
  // A stale ETag and a well-formed foreign one both fail the condition.
  await rejectsWith(t.updateEntity({ partitionKey: "p", rowKey: "r", age: 1 }, "Replace", { etag: created.etag }), 412, "UpdateConditionNotSatisfied");
  await rejectsWith(t.updateEntity({ partitionKey: "p", rowKey: "r", age: 1 }, "Replace", { etag: 'W/"wrong"' }), 412, "UpdateConditionNotSatisfied");
  await rejectsWith(t.deleteEntity("p", "r", { etag: created.etag }), 412, "UpdateConditionNotSatisfied");
  await t.updateEntity({ partitionKey: "p", rowKey: "r", only: true }, "Replace", { etag: merged.etag });
  e = await t.getEntity("p", "r");
  assert.equal(e.name, undefined);
  assert.equal(e.only, true);

  await t.upsertEntity({ partitionKey: "p", rowKey: "u", n: 1 }, "Replace");
  await t.upsertEntity({ partitionKey: "p", rowKey: "u", m: 2 }, "Merge");
  e = await t.getEntity("p", "u");
  assert.deepEqual([e.n, e.m], [1, 2]);
  await t.deleteEntity("p", "u");
  await rejectsWith(t.getEntity("p", "u"), 404, "ResourceNotFound");
  await rejectsWith(t.createEntity({ partitionKey: "p", rowKey: "bad", d: { value: "0000-10-01T0:00:00,10", type: "DateTime" } }), 400, "InvalidInput");
});

test("queries: filters, select, paging past 1,000", async () => {
  const t = table("JsPaging");
  await t.createTable();
  for (let batch = 0; batch < 12; batch++) {
    const actions = [];
    for (let i = 0; i < 100; i++) {
      const n = batch * 100 + i;
      actions.push(["create", { partitionKey: "p", rowKey: String(n).padStart(5, "0"), n, even: n % 2 === 0 }]);
    }
    await t.submitTransaction(actions);
  }
  const all = await collect(t.listEntities());
  assert.equal(all.length, 1200);
  assert.equal(all[0].rowKey, "00000");
  assert.equal(all[1199].rowKey, "01199");

  const pages = [];
  for await (const page of t.listEntities({ queryOptions: { filter: odata`even eq ${true}`, select: ["n"] } }).byPage({ maxPageSize: 250 })) {
    pages.push(page.length);
  }
  assert.deepEqual(pages, [250, 250, 100]);
  const some = await collect(t.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${"p"} and n ge ${1190}` } }));
  assert.equal(some.length, 10);
});

test("transactions: all or nothing, and the failing action's index", async () => {
  const t = table("JsBatches");
  await t.createTable();
  await t.createEntity({ partitionKey: "p", rowKey: "exists" });
  await rejectsWith(
    t.submitTransaction([["create", { partitionKey: "p", rowKey: "a" }], ["create", { partitionKey: "p", rowKey: "exists" }]]),
    409,
    "EntityAlreadyExists",
  );
  await rejectsWith(t.getEntity("p", "a"), 404, "ResourceNotFound");
  const ok = await t.submitTransaction([
    ["create", { partitionKey: "p", rowKey: "b", n: 1 }],
    ["upsert", { partitionKey: "p", rowKey: "c", n: 2 }, "Merge"],
    ["update", { partitionKey: "p", rowKey: "exists", n: 3 }, "Replace"],
    ["upsert", { partitionKey: "p", rowKey: "d" }],
  ]);
  assert.equal(ok.status, 202);
  assert.equal((await collect(t.listEntities())).length, 4);
});

test("SAS: table and account signatures, and stored access policies", async () => {
  const t = table("JsShared");
  await t.createTable();
  await t.createEntity({ partitionKey: "p", rowKey: "r" });
  const expiresOn = new Date(Date.now() + 3600_000);

  const readSas = generateTableSas("JsShared", devCred(), { permissions: { query: true }, expiresOn });
  const reader = new TableClient(`${endpoint}/${devName}/`, "JsShared", new AzureSASCredential(readSas), insecure);
  assert.equal((await reader.getEntity("p", "r")).rowKey, "r");
  await rejectsWith(reader.createEntity({ partitionKey: "p", rowKey: "x" }), 403, "AuthorizationPermissionMismatch");

  const acctSas = generateAccountSas(devCred(), { permissions: { read: true, list: true, add: true, write: true }, resourceTypes: "sco", expiresOn });
  const acctSvc = new TableServiceClient(`${endpoint}/${devName}/`, new AzureSASCredential(acctSas), insecure);
  assert.ok((await collect(acctSvc.listTables())).some((x) => x.name === "JsShared"));

  // A stored access policy supplies permissions and expiry; changing it changes what its
  // signatures may do, and removing it ends them.
  await t.setAccessPolicy([{ id: "readers", accessPolicy: { permission: "r", start: new Date(Date.now() - 60_000), expiry: expiresOn } }]);
  const acl = await t.getAccessPolicy();
  assert.equal(acl.length, 1);
  assert.equal(acl[0].id, "readers");
  assert.equal(acl[0].accessPolicy.permission, "r");
  const policySas = generateTableSas("JsShared", devCred(), { identifier: "readers" });
  const policyReader = new TableClient(`${endpoint}/${devName}/`, "JsShared", new AzureSASCredential(policySas), insecure);
  assert.equal((await policyReader.getEntity("p", "r")).rowKey, "r");
  await rejectsWith(policyReader.createEntity({ partitionKey: "p", rowKey: "y" }), 403, "AuthorizationPermissionMismatch");
  // The SAS and the policy may not both set the permissions.
  const doubled = generateTableSas("JsShared", devCred(), { identifier: "readers", permissions: { query: true } });
  const doubledReader = new TableClient(`${endpoint}/${devName}/`, "JsShared", new AzureSASCredential(doubled), insecure);
  await rejectsWith(doubledReader.getEntity("p", "r"), 403, "AuthenticationFailed");
  await t.setAccessPolicy([{ id: "readers", accessPolicy: { permission: "a", expiry: expiresOn } }]);
  await rejectsWith(policyReader.getEntity("p", "r"), 403, "AuthorizationPermissionMismatch");
  await t.setAccessPolicy([]);
  await rejectsWith(policyReader.getEntity("p", "r"), 403, "AuthenticationFailed");
});

test("service properties, CORS preflight and actual requests", async () => {
  const svc = service();
  const before = await svc.getProperties();
  assert.deepEqual(before.cors, []);
  await svc.setProperties({
    cors: [{ allowedOrigins: "https://app.example", allowedMethods: "GET,PUT,POST", allowedHeaders: "x-ms-*,content-type", exposedHeaders: "x-ms-*", maxAgeInSeconds: 600 }],
    hourMetrics: { version: "1.0", enabled: true, includeAPIs: true, retentionPolicy: { enabled: true, days: 7 } },
  });
  const props = await svc.getProperties();
  assert.equal(props.cors.length, 1);
  assert.equal(props.cors[0].allowedOrigins, "https://app.example");
  assert.equal(props.hourMetrics.retentionPolicy.days, 7);
  const six = Array.from({ length: 6 }, () => ({ allowedOrigins: "*", allowedMethods: "GET", allowedHeaders: "", exposedHeaders: "", maxAgeInSeconds: 1 }));
  await rejectsWith(svc.setProperties({ cors: six }), 400, "InvalidXmlDocument");
  await rejectsWith(svc.setProperties({ logging: { version: "1.0", read: true, write: true, delete: true, retentionPolicy: { enabled: true, days: 366 } } }), 400, "InvalidXmlDocument");

  const preflight = (origin, method, headers) =>
    fetch(`${endpoint}/${devName}/JsCors()`, {
      method: "OPTIONS",
      headers: { Origin: origin, "Access-Control-Request-Method": method, ...(headers ? { "Access-Control-Request-Headers": headers } : {}) },
    });
  let res = await preflight("https://app.example", "PUT", "x-ms-version,content-type");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("access-control-allow-origin"), "https://app.example");
  assert.equal(res.headers.get("access-control-max-age"), "600");
  res = await preflight("https://evil.example", "PUT");
  assert.equal(res.status, 403);
  assert.equal(res.headers.get("x-ms-error-code"), "CorsPreflightFailure");

  // An actual request from the allowed origin carries the CORS headers.
  const t = new TableClient(`${endpoint}/${devName}/`, "JsCors", devCred(), {
    ...insecure,
    additionalPolicies: [{ policy: { name: "origin", sendRequest: (req, next) => { req.headers.set("Origin", "https://app.example"); return next(req); } }, position: "perCall" }],
  });
  let seen;
  await t.createTable({ onResponse: (r) => { seen = r.headers; } });
  assert.equal(seen.get("access-control-allow-origin"), "https://app.example");
  assert.equal(seen.get("vary"), "Origin");
  assert.match(seen.get("access-control-expose-headers"), /x-ms-request-id/);
});

test("secondary endpoint: stats and reads, no writes", async () => {
  // The SDK derives the secondary by suffixing the host's first label; on a path-style
  // endpoint with a one-label host the account segment names it instead.
  const port = new URL(endpoint).port;
  const secondary = new TableServiceClient(`http://localhost:${port}/${devName}-secondary/`, devCred(), insecure);
  const stats = await secondary.getStatistics();
  assert.equal(stats.geoReplication.status, "live");
  await rejectsWith(service().getStatistics(), 400, "InvalidQueryParameterValue");

  const t = table("JsGeo");
  await t.createTable();
  await t.createEntity({ partitionKey: "p", rowKey: "r" });
  const geo = new TableClient(`http://localhost:${port}/${devName}-secondary/`, "JsGeo", devCred(), insecure);
  assert.equal((await geo.getEntity("p", "r")).rowKey, "r");
  await rejectsWith(geo.createEntity({ partitionKey: "p", rowKey: "s" }), 403, "AuthorizationFailure");
});

test("accounts are separate namespaces", async () => {
  await table("JsPrivate").createTable();
  await table("JsPrivate").createEntity({ partitionKey: "p", rowKey: "dev" });
  const other = service(otherName, otherKey);
  const names = (await collect(other.listTables())).map((x) => x.name);
  assert.ok(!names.includes("JsPrivate"), `the other account lists ${names}`);
  const theirs = table("JsPrivate", otherName, otherKey);
  await rejectsWith(theirs.getEntity("p", "dev"), 404, "TableNotFound");
  await rejectsWith(theirs.createEntity({ partitionKey: "p", rowKey: "x" }), 404, "TableNotFound");
  await other.deleteTable("JsPrivate"); // the SDK hides the 404; the table it names is not ours
  assert.equal((await table("JsPrivate").getEntity("p", "dev")).rowKey, "dev");
  await theirs.createTable();
  await theirs.createEntity({ partitionKey: "p", rowKey: "other" });
  assert.deepEqual((await collect(table("JsPrivate").listEntities())).map((e) => e.rowKey), ["dev"]);
  assert.deepEqual((await collect(theirs.listEntities())).map((e) => e.rowKey), ["other"]);
  // A SAS signed by one account does not open the other's tables.
  const sas = generateTableSas("JsPrivate", devCred(), { permissions: { query: true }, expiresOn: new Date(Date.now() + 3600_000) });
  const wrong = new TableClient(`${endpoint}/${otherName}/`, "JsPrivate", new AzureSASCredential(sas), insecure);
  await rejectsWith(wrong.getEntity("p", "other"), 403, "AuthenticationFailed");
});

test("errors carry x-ms-error-code; unknown versions and repeated SAS parameters are refused", async () => {
  const t = table("JsRaw");
  await t.createTable();
  const sas = generateTableSas("JsRaw", devCred(), { permissions: { query: true }, expiresOn: new Date(Date.now() + 3600_000) });
  let res = await fetch(`${endpoint}/${devName}/JsRaw(PartitionKey='p',RowKey='r')?${sas}`);
  assert.equal(res.status, 404);
  assert.equal(res.headers.get("x-ms-error-code"), "ResourceNotFound");
  const sig = new URLSearchParams(sas).get("sig");
  res = await fetch(`${endpoint}/${devName}/JsRaw()?${sas}&sig=${encodeURIComponent(sig)}`);
  assert.equal(res.status, 403);
  assert.equal(res.headers.get("x-ms-error-code"), "AuthenticationFailed");
  res = await fetch(`${endpoint}/${devName}/JsRaw()?$top=0&${sas}`);
  assert.equal(res.status, 200);
  assert.deepEqual((await res.json()).value, []);

  const versioned = new TableClient(`${endpoint}/${devName}/`, "JsRaw", devCred(), {
    ...insecure,
    additionalPolicies: [{ policy: { name: "version", sendRequest: (req, next) => { req.headers.set("x-ms-version", "2099-01-01"); return next(req); } }, position: "perRetry" }],
  });
  await rejectsWith(versioned.getEntity("p", "r"), 400, "InvalidHeaderValue");
});
