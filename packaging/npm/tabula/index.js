// @tabuladb/tabula: the tabula binary for this platform (from the optional dependency
// @tabuladb/tabula-<platform>-<arch> that npm installed), and helpers that give a test a
// fresh, isolated fake of Azure Table storage. See README.md.
"use strict";

const { spawn } = require("node:child_process");
const { randomBytes } = require("node:crypto");
const path = require("node:path");

const PLATFORMS = {
  "linux x64": "@tabuladb/tabula-linux-x64",
  "linux arm64": "@tabuladb/tabula-linux-arm64",
  "darwin x64": "@tabuladb/tabula-darwin-x64",
  "darwin arm64": "@tabuladb/tabula-darwin-arm64",
  "win32 x64": "@tabuladb/tabula-win32-x64",
  "win32 arm64": "@tabuladb/tabula-win32-arm64",
};

const BANNER_TIMEOUT_MS = 30_000;

/** The path of the tabula binary: $TABULA_BINARY, else this platform's package's. */
function binaryPath() {
  if (process.env.TABULA_BINARY) return process.env.TABULA_BINARY;
  const pkg = PLATFORMS[`${process.platform} ${process.arch}`];
  if (!pkg) {
    throw new Error(`@tabuladb/tabula: no tabula binary is published for ${process.platform} ${process.arch}`);
  }
  const exe = process.platform === "win32" ? "tabula.exe" : "tabula";
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", exe);
  } catch {
    throw new Error(
      `@tabuladb/tabula: the package ${pkg} is not installed; it is an optional dependency, ` +
        `so reinstall without --no-optional / --omit=optional (or set TABULA_BINARY)`,
    );
  }
}

function field(connectionString, key) {
  for (const part of connectionString.split(";")) {
    const i = part.indexOf("=");
    if (i > 0 && part.slice(0, i) === key) return part.slice(i + 1);
  }
  return undefined;
}

/**
 * Starts `tabula serve` (in memory, on a free port of 127.0.0.1, no request log unless
 * options.args say otherwise) and resolves once it serves. The server has an admin key of
 * its own (options.adminKey, or a random one) for the fresh-account API.
 *
 * @param {{args?: string[], binary?: string, adminKey?: string, env?: object}} [options]
 */
function start(options = {}) {
  const adminKey = options.adminKey ?? randomBytes(24).toString("base64url");
  const args = ["serve", "--in-memory", "--addr", "127.0.0.1:0", "--silent", ...(options.args ?? [])];
  const proc = spawn(options.binary ?? binaryPath(), args, {
    stdio: ["ignore", "pipe", "pipe"],
    // The key goes through the environment, which a server without the account API ignores.
    env: { ...process.env, ...options.env, TABULA_ADMIN_KEY: adminKey },
    windowsHide: true,
  });
  const exited = new Promise((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    let out = "";
    let errs = "";
    let settled = false;
    const fail = (msg) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      proc.kill("SIGKILL");
      reject(new Error(`${msg}\nstdout: ${out}\nstderr: ${errs}`));
    };
    const timer = setTimeout(() => fail(`tabula printed no connection string within ${BANNER_TIMEOUT_MS} ms`), BANNER_TIMEOUT_MS);
    proc.once("error", (err) => fail(`starting ${args.join(" ")}: ${err.message}`));
    exited.then(({ code, signal }) => fail(`tabula exited (${code ?? signal}) before serving`));
    proc.stderr.on("data", (chunk) => (errs += chunk));
    proc.stdout.on("data", function banner(chunk) {
      out += chunk;
      const m = /DefaultEndpointsProtocol=\S+/.exec(out);
      if (!m || !/Console/.test(out) || settled) return; // the banner's last line is the console's
      settled = true;
      clearTimeout(timer);
      proc.stdout.off("data", banner);
      proc.stdout.resume(); // drain whatever else it prints
      const connectionString = m[0];
      const accountName = field(connectionString, "AccountName");
      const tableEndpoint = field(connectionString, "TableEndpoint").replace(/\/+$/, "");
      const endpoint = tableEndpoint.endsWith("/" + accountName)
        ? tableEndpoint.slice(0, -accountName.length - 1)
        : tableEndpoint;
      resolve(new Server(proc, exited, { endpoint, connectionString, accountName, accountKey: field(connectionString, "AccountKey"), adminKey }));
    });
  });
}

/** A running `tabula serve`. */
class Server {
  constructor(proc, exited, info) {
    this.process = proc;
    this._exited = exited;
    /** Base URL, without an account: http://127.0.0.1:PORT */
    this.endpoint = info.endpoint;
    /** The connection string of the server's own account (the development account). */
    this.connectionString = info.connectionString;
    this.accountName = info.accountName;
    this.accountKey = info.accountKey;
    /** The admin key of the account API (HTTP Basic user _tabula). */
    this.adminKey = info.adminKey;
  }

  _admin() {
    return "Basic " + Buffer.from(`_tabula:${this.adminKey}`).toString("base64");
  }

  /**
   * A fresh, empty, isolated account on this server, with its own key and tables, through
   * the account API (POST /_tabula/api/accounts). Rejects with err.code "ENOACCOUNTAPI" on
   * a server without that API.
   *
   * @param {string} [name] generated when absent
   */
  async createAccount(name) {
    const res = await fetch(`${this.endpoint}/_tabula/api/accounts`, {
      method: "POST",
      headers: { authorization: this._admin(), "content-type": "application/json" },
      body: JSON.stringify(name ? { name } : {}),
    });
    // A server without the API answers 404 or 405, or 401 as it does to any credential it
    // does not know (it ignored TABULA_ADMIN_KEY).
    if ([401, 403, 404, 405].includes(res.status)) {
      const body = await res.text();
      const err = new Error(`this tabula serve has no account API (POST /_tabula/api/accounts: ${res.status} ${body.trim()})`);
      err.code = "ENOACCOUNTAPI";
      throw err;
    }
    if (res.status !== 201) {
      throw new Error(`creating an account: ${res.status} ${await res.text()}`);
    }
    const a = await res.json();
    return {
      name: a.name,
      key: a.key,
      connectionString: a.connectionString,
      /** Drops the account and all its data. */
      delete: async () => {
        const del = await fetch(`${this.endpoint}/_tabula/api/accounts/${encodeURIComponent(a.name)}`, {
          method: "DELETE",
          headers: { authorization: this._admin() },
        });
        await del.arrayBuffer();
        if (del.status !== 204 && del.status !== 404) throw new Error(`deleting account ${a.name}: ${del.status}`);
      },
    };
  }

  /** Stops the server (SIGTERM, then SIGKILL after 10 s) and resolves once it has exited. */
  async stop() {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill("SIGTERM");
      const timer = setTimeout(() => this.process.kill("SIGKILL"), 10_000);
      await this._exited;
      clearTimeout(timer);
    }
  }
}

let shared; // Promise<Server|null>: the process's shared server; null once it has no account API

function sharedServer() {
  if (!shared) {
    shared = start().then((srv) => {
      // It must not keep the test process alive, and goes when the process does.
      srv.process.unref();
      srv.process.stdout.unref?.();
      srv.process.stderr.unref?.();
      process.once("exit", () => srv.process.kill("SIGKILL"));
      return srv;
    });
    shared.catch(() => (shared = undefined));
  }
  return shared;
}

/**
 * A fresh, isolated fake of Azure Table storage for one test: { connectionString,
 * accountName, accountKey, stop() }. It is a new account on a server the process shares
 * (started on first use, in memory, gone with the process), so it costs well under a
 * millisecond; against a tabula without the account API, it is a server of its own.
 * Call stop() when the test ends: it drops the account and its data (or stops the server).
 */
let noAccountAPI = false; // the shared server has none: every fake is a server of its own

async function fake() {
  if (!noAccountAPI) {
    const srv = await sharedServer();
    try {
      const account = await srv.createAccount();
      return {
        connectionString: account.connectionString,
        accountName: account.name,
        accountKey: account.key,
        stop: account.delete,
      };
    } catch (err) {
      if (err.code !== "ENOACCOUNTAPI") throw err;
      noAccountAPI = true;
      srv.stop();
    }
  }
  const own = await start();
  return {
    connectionString: own.connectionString,
    accountName: own.accountName,
    accountKey: own.accountKey,
    stop: () => own.stop(),
  };
}

module.exports = { binaryPath, start, fake, Server };
