// Package server puts the Azure Table service's REST protocol in front of a tabula.DB, so
// that programs written against Azure Table storage, in any language and through the
// official SDKs, run against Tabula unchanged.
//
// A Server is an http.Handler. It speaks JSON only (the service dropped Atom in 2015) at
// the storage emulators' path-style URLs, the account being the first path segment:
//
//	/devstoreaccount1/Tables                                     create, list
//	/devstoreaccount1/Tables('Movies')                           delete
//	/devstoreaccount1/Movies()                                   insert, query
//	/devstoreaccount1/Movies(PartitionKey='Action',RowKey='Up')  get, update, merge, upsert, delete
//	/devstoreaccount1/$batch                                     entity group transactions
//	/devstoreaccount1/Movies?comp=acl                            table ACLs (stored access policies)
//	/devstoreaccount1/?restype=service&comp=properties           service properties (logging, metrics, CORS)
//	/devstoreaccount1-secondary/?restype=service&comp=stats      service stats, on the read-only secondary
//
// What it reproduces, from recordings of the real service where they exist (semantics.md):
// the status codes, headers and odata.error bodies of every operation, the three metadata
// levels with $format overriding Accept, the JSON form of each EDM type, continuation
// headers, Prefer, If-Match and X-HTTP-Method, the multipart layout of batch responses
// (a failed change set is still 202, with one part carrying the failing operation's status
// and an "<index>:" message), Shared Key, Shared Key Lite and SAS authentication, and the
// 4 MiB request limit. Malformed input of any kind gets the service's 4xx, never a 500.
//
// Tabula's own additions are marked as such: the X-Tabula-Error-Detail response header says
// exactly what was wrong with a refused request, in words the service's fixed messages do
// not have, and EncodeEntity and DecodeEntity convert between tabula.Entity and the JSON
// the SDKs exchange.
//
// Properties are written in name order, the order the engine stores them in; the service
// returns them in the order they were written, and no client relies on either.
//
// Each account is its own namespace of tables in the one DB (see Options.Accounts), with its
// own service properties; "<account>-secondary" serves its reads and stats and refuses
// writes, as the read-access geo-redundant secondary does. What it does not do: host-style
// account URLs.
package server
