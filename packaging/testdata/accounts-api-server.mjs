#!/usr/bin/env node
// A stand-in for `tabula serve` that speaks only the fresh-account API's contract, for the
// npm and Python helpers' tests of the path a real server with that API takes:
//   POST /_tabula/api/accounts      (HTTP Basic _tabula:$TABULA_ADMIN_KEY; optional {"name"})
//        → 201 {"name","key","connectionString"}
//   DELETE /_tabula/api/accounts/N  (the same credential) → 204, 404 if there is no such account
//   GET /_contract/calls            → the calls so far, for the tests to read
// It prints tabula's banner: the connection string of its own account, then the console line.
// Run as TABULA_BINARY (it takes `serve … --addr HOST:PORT …` and ignores the other flags).
import { createServer } from "node:http";
import { randomBytes } from "node:crypto";

const args = process.argv.slice(2);
const addr = args[args.indexOf("--addr") + 1] ?? "127.0.0.1:0";
const [host, port] = [addr.slice(0, addr.lastIndexOf(":")), Number(addr.slice(addr.lastIndexOf(":") + 1))];
const adminKey = process.env.TABULA_ADMIN_KEY;
const accounts = new Map();
const calls = [];
let endpoint;
let n = 0;

const connectionString = (name, key) =>
  `DefaultEndpointsProtocol=http;AccountName=${name};AccountKey=${key};TableEndpoint=${endpoint}/${name}/;`;

const server = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    calls.push({ method: req.method, url: req.url, authorization: req.headers.authorization ?? "", body });
    const admin = req.headers.authorization === "Basic " + Buffer.from(`_tabula:${adminKey}`).toString("base64");
    if (req.method === "GET" && req.url === "/_contract/calls") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(calls));
    } else if (!req.url.startsWith("/_tabula/api/accounts")) {
      res.writeHead(403).end();
    } else if (!adminKey || !admin) {
      res.writeHead(401).end("tabula: sign in");
    } else if (req.method === "POST" && req.url === "/_tabula/api/accounts") {
      const name = (body && JSON.parse(body).name) || `acct${++n}`;
      const key = randomBytes(32).toString("base64");
      accounts.set(name, key);
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ name, key, connectionString: connectionString(name, key) }));
    } else if (req.method === "DELETE") {
      const name = decodeURIComponent(req.url.slice("/_tabula/api/accounts/".length));
      res.writeHead(accounts.delete(name) ? 204 : 404).end();
    } else {
      res.writeHead(405).end();
    }
  });
});
server.listen(port, host, () => {
  endpoint = `http://${host}:${server.address().port}`;
  console.log(`Stand-in for tabula serve on ${endpoint}.`);
  console.log(`Connection string for devstoreaccount1:\n  ${connectionString("devstoreaccount1", "a2V5")}`);
  console.log(`Console (sign in with an account name and key): ${endpoint}/_tabula/console/`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
