import type { ChildProcess } from "node:child_process";

/** The path of the tabula binary: $TABULA_BINARY, else this platform's package's. */
export function binaryPath(): string;

export interface StartOptions {
  /** More `tabula serve` flags, after --in-memory --addr 127.0.0.1:0 --silent. */
  args?: string[];
  /** The binary to run (default: binaryPath()). */
  binary?: string;
  /** The admin key of the account API (default: a random one). */
  adminKey?: string;
  /** More environment variables for the server. */
  env?: Record<string, string>;
}

export interface Account {
  name: string;
  key: string;
  connectionString: string;
  /** Drops the account and all its data. */
  delete(): Promise<void>;
}

export class Server {
  readonly process: ChildProcess;
  /** Base URL, without an account: http://127.0.0.1:PORT */
  readonly endpoint: string;
  /** The connection string of the server's own account. */
  readonly connectionString: string;
  readonly accountName: string;
  readonly accountKey: string;
  /** The admin key of the account API (HTTP Basic user _tabula). */
  readonly adminKey: string;
  /** A fresh, empty, isolated account; rejects with code "ENOACCOUNTAPI" on a server without the account API. */
  createAccount(name?: string): Promise<Account>;
  /** Stops the server and resolves once it has exited. */
  stop(): Promise<void>;
}

/** Starts `tabula serve` in memory on a free loopback port. */
export function start(options?: StartOptions): Promise<Server>;

export interface Fake {
  connectionString: string;
  accountName: string;
  accountKey: string;
  /** Drops the fake and its data. */
  stop(): Promise<void>;
}

/** A fresh, isolated fake for one test: an account on the process's shared server (or a server of its own). */
export function fake(): Promise<Fake>;
