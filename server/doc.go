// Package server puts the Azure Table service's REST protocol in front of a tabula.DB, so
// that programs written against Azure Table storage, in any language and through the
// official SDKs, run against Tabula unchanged.
//
// A Server is an http.Handler. It speaks JSON only (the service dropped Atom in 2015) at
// the storage emulators' path-style URLs, the account being the first path segment, or at
// host-style URLs (below):
//
//	/devstoreaccount1/Tables                                     create, list
//	/devstoreaccount1/Tables('Movies')                           get, delete
//	/devstoreaccount1/Movies()                                   insert, query
//	/devstoreaccount1/Movies(PartitionKey='Action',RowKey='Up')  get, update, merge, upsert, delete
//	/devstoreaccount1/$batch                                     entity group transactions
//	/devstoreaccount1/Movies?comp=acl                            table ACLs (stored access policies)
//	/devstoreaccount1/?restype=service&comp=properties           service properties (logging, metrics, CORS)
//	/devstoreaccount1-secondary/?restype=service&comp=stats      service stats, on the read-only secondary
//
// The account may instead be named in the host, as on the service and in Azurite's
// production-style URLs: on devstoreaccount1.table.localhost the paths above lose their
// first segment (/Tables, /Movies(), /$batch). Only a host name whose first label is an
// account the Server serves (or its -secondary) is read so; any other host, and every IP
// address, is read path-style.
//
// What it reproduces, from recordings of the real service where they exist:
// the status codes, headers and odata.error bodies of every operation (the XML operations,
// ACLs and service properties and stats, answer with the XML m:error document), the three
// metadata levels with $format overriding Accept, the JSON form of each EDM type, continuation
// headers, Prefer, If-Match and X-HTTP-Method, the multipart layout of batch responses
// (a failed change set is still 202, with one part carrying the failing operation's status
// and an "<index>:" message, unless it was the change set's only operation), Shared Key, Shared Key Lite and SAS authentication, and the
// 4 MiB request limit. Malformed input of any kind gets the service's 4xx, never a 500.
//
// Tabula's own additions are marked as such: the X-Tabula-Error-Detail response header says
// exactly what was wrong with a refused request, in words the service's fixed messages do
// not have, and EncodeEntity turns a tabula.Entity into the JSON body an SDK sends.
//
// Transient states on request (Tabula's own; off by default, as on the emulators): after
// Delete Table the service answers 409 TableBeingDeleted to a create of the name, and to any
// operation on the table, for at least 40 seconds (REST docs: "Delete Table"). With
// tabula.Options.TableDeleteDelay, `tabula serve --table-delete-delay 40s` or the
// management API (below) a Server does the same, on the DB's clock, so that a client's retry
// code for it runs. An error a setting causes names, over the wire, the tabula serve flag and
// the management API field that set it.
//
// Properties are written in name order, the order the engine stores them in; the service
// returns them in the order they were written, and no client relies on either.
//
// Each account is its own namespace of tables in the one DB (see Options.Accounts), with its
// own service properties and its own account rate limit; "<account>-secondary" serves its
// reads and stats and refuses writes, as the read-access geo-redundant secondary does.
//
// To serve on a network, NewHTTPServer and LimitListener bound what a client can hold
// (HTTPLimits): timeouts for headers, bodies that stall, responses and idle connections, and
// a cap on open connections that sheds idle and stalled ones first.
//
// # Steering the simulation: the management API
//
// Under ReservedPrefix+"api/" a small JSON API steers what package partition simulates while
// the server runs, so that a test in any language can turn throttling on, run its retry logic
// and read what the service would have seen. It is guarded by the account key: HTTP Basic
// authentication with the account name as the user and one of its keys as the password.
// Signed in so, every resource (and the console) is the account's alone: its tables in the
// report and explain, its limits, its faults, its query switches, its counters; no account
// can read or steer another. The administrator (user "_tabula" with the admin key, see
// below) reads and steers every account at once (the report names each table
// account/table), or one with ?account=NAME. GET reads a resource; PUT changes the fields its body names and leaves the others as they
// are; both answer 200 with the resource now in force. The report, explain and data are read-only.
//
//	GET|PUT /_tabula/api/limits   {"mode":"observe","partitionRate":2000,"partitionBurst":2000,
//	                               "accountRate":20000,"accountBurst":20000}
//	GET|PUT /_tabula/api/faults   {"seed":0,"serverBusy":0,"timeout":0,"kinds":["get",…],
//	                               "continuationEvery":0,"offlineOnSplit":false,"offlineFor":"3s",
//	                               "tableDeleteDelay":"0s"}
//	DELETE  /_tabula/api/faults   turn fault injection off (tableDeleteDelay stays)
//	GET|PUT /_tabula/api/queries  {"forbidFullScans":false,"boundaryContinuations":false}
//	POST    /_tabula/api/reset    zero the heat report's traffic counters (204)
//	GET     /_tabula/api/report   the heat report (?format=svg: as an SVG heat map)
//	GET     /_tabula/api/explain?table=Movies&filter=…  how a $filter runs, with one page's cost:
//	                              {"table":"Movies","filter":"PartitionKey eq 'Action' or PartitionKey eq 'Drama'",
//	                               "plan":"MultiRange","service":"FullScan",
//	                               "detail":"MultiRange PartitionKey = 'Action' ∪ PartitionKey = 'Drama'",
//	                               "scanned":2,"returned":2,"ratio":1,"more":false}
//	GET     /_tabula/api/data?table=Movies&filter=…&top=50  a page of entities (top 1 to 1,000),
//	                              each property with its EDM type, and the next page's
//	                              nextPartitionKey and nextRowKey (parameters of the same name)
//	GET     /_tabula/api/data/export?table=Movies&filter=…  the matching entities as an
//	                              interchange file (tabula.DB.Export), a download
//
// The limits (tabula.Options.Limits): mode is off, observe or enforce; rates are entities per
// second (> 0), bursts are entities (>= 1), and a rate given without its burst gets one
// second's worth; accountRate and accountBurst apply to each account, every account having a
// bucket of its own. Changing a rate refills every bucket. The faults (tabula.Options.Faults):
// serverBusy and timeout are probabilities per operation (together at most 1) of the kinds
// listed (get, query, insert, replace, merge, insert-or-replace, insert-or-merge, delete,
// batch, create-table, delete-table, query-tables; an empty list means all); continuationEvery
// ends a query page after that many scanned entities (0: never); offlineFor is a Go duration.
// tableDeleteDelay (tabula.Options.TableDeleteDelay, a Go duration, "40s" as on the service)
// keeps deleted tables in the TableBeingDeleted state; it is the whole server's, so every
// account reads it and only the administrator (without ?account=) changes it (403 otherwise).
// A PUT of the faults restarts their draws, so the same seed and the same requests give the
// same faults. A refused change answers 400 with {"error": "<field>: what is wrong", "field":
// "<field>"} and changes nothing.
//
// Explain (Tabula's own; the service has no such operation) plans a $filter (filter=) on a
// table (table=) of the signed-in account. plan is how Tabula runs it (Empty, Point,
// RowRange, PartitionRange, MultiRange or FullScan), service how the Azure Table service
// would (Point, RowRange, PartitionRange or FullScan; the results are the same), detail the
// plan with the key ranges it scans. It then runs one page, charged to the limits as any
// query is: scanned and returned count the entities it examined and returned, ratio is their
// quotient (0 when none were returned), more says the query goes on past that page, and
// runError names why the page could not run (such as ServerBusy under enforced limits). A
// filter that does not parse answers 400, a missing table 404, each with {"error": "…"}.
//
// Against `tabula serve` with the development account:
//
//	KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
//	curl -u devstoreaccount1:$KEY -X PUT http://127.0.0.1:10002/_tabula/api/limits \
//	     -d '{"mode":"enforce","partitionRate":10}'
//	# ... run the client under test: writes above 10 entities/s per PartitionKey get 503 ServerBusy
//	curl -u devstoreaccount1:$KEY http://127.0.0.1:10002/_tabula/api/report
//	curl -u devstoreaccount1:$KEY -X PUT http://127.0.0.1:10002/_tabula/api/limits -d '{"mode":"observe"}'
//
// # A fresh account per test: the accounts API
//
// One running server gives every test of a suite, in any language, an account of its own:
// fresh, empty and isolated (its own key and tables, ACLs and service properties), made and
// dropped in tens of microseconds (BenchmarkFreshAccount). These take the administrator's
// credential, HTTP Basic with the user "_tabula" (AdminUser) and the admin key
// (Options.AdminKey; `tabula serve` prints it at start, or takes --admin-key or
// $TABULA_ADMIN_KEY):
//
//	POST   /_tabula/api/accounts         body {"name":"…"} or none (a name is made up) → 201
//	                                     {"name":"…","key":"<base64>","connectionString":"…"}
//	GET    /_tabula/api/accounts         {"accounts":[{"name":"…"},…]}: names, never keys
//	DELETE /_tabula/api/accounts/{name}  drop the account and all its data → 204 (also with
//	                                     the account's own credential)
//
// A name is 3 to 24 lowercase letters and digits, as the service's account names are; a
// taken name answers 409, an unknown one 404. The connection string names the scheme and
// host the request came in on, path-style (TableEndpoint=…/name/), as `tabula serve` prints
// for its accounts. Accounts created so live as long as the server process: they are not
// written to the data directory (a suite's accounts are worth nothing after it), and what
// they held when a server stopped without deleting them is dropped by the next server on the
// directory. The accounts the server was started with cannot be deleted (403).
//
//	ADMIN=… # the admin key tabula serve printed
//	curl -u _tabula:$ADMIN -X POST http://127.0.0.1:10002/_tabula/api/accounts
//	curl -u _tabula:$ADMIN -X DELETE http://127.0.0.1:10002/_tabula/api/accounts/t2fh4…
//
// # Resetting to a fixture: saved states
//
// A suite in any language saves the whole server's state by name once it has loaded its
// fixture, and restores it between tests: every account's tables, entities, access policies
// and service properties, and the accounts created through the accounts API, as they were
// when saved (the settings above are not state and stay as they are). In memory both cost
// microseconds whatever the data (tabula.Snapshot); a server on disk (--data) refuses both
// with 409, since a restore there would rewrite the data. The administrator's credential only,
// as the state is every account's (Server.SaveSnapshot and friends are the same in Go):
//
//	GET    /_tabula/api/snapshots                 {"snapshots":[{"name":"…","saved":"…"},…]}
//	POST   /_tabula/api/snapshots/{name}          save the state as name, replacing → 201
//	GET    /_tabula/api/snapshots/{name}          {"name":"…","saved":"…"}, or 404
//	POST   /_tabula/api/snapshots/{name}/restore  put the server back to it → 204, or 404
//	DELETE /_tabula/api/snapshots/{name}          forget it → 204, or 404
//
// A name is 1 to 63 ASCII letters, digits, '-', '_' and '.'; a server keeps at most
// MaxSnapshots (100) states, each holding only what has changed since it was saved.
//
//	curl -u _tabula:$ADMIN -X POST http://127.0.0.1:10002/_tabula/api/snapshots/fixture
//	curl -u _tabula:$ADMIN -X POST http://127.0.0.1:10002/_tabula/api/snapshots/fixture/restore
package server
