// Package remote runs Tabula's Go API against a table service over its REST protocol: a
// `tabula serve` shared by many processes, Azurite, an Azure Storage account or the Cosmos DB
// Table API. A *Client offers the operations of an embedded *tabula.DB, and its tables those
// of a *tabula.Table, with the same signatures, types and errors: the same *tabula.Error
// sentinels match with errors.Is, a failed transaction is a *tabula.TransactionError with the
// failing action's index, and queries page with the same continuation tokens. So code written
// against tabula.ServiceAPI and tabula.TableAPI runs on either backend, and a program that
// outgrows one machine moves to the service by changing how it opens its database:
//
//	svc, err := remote.Dial(os.Getenv("TABLES_CONNECTION_STRING"), nil)
//
// It is a package of its own, not part of package tabula, so that programs that embed Tabula
// do not link the Azure SDK's HTTP pipeline, and so that the engine's package stays the
// engine. Requests go through the official SDK (aztables and azcore), with Shared Key (a
// connection string with an AccountKey), a shared access signature (a connection string with
// SharedAccessSignature, or DialSAS) or a Microsoft Entra token (DialToken).
//
// Beyond tabula.TableAPI and tabula.ServiceAPI, a Table reads and sets its stored access
// policies (tabula.AccessPoliciesAPI) and a Client the account's service properties
// (tabula.ServicePropertiesAPI), so that tabula.ExportService and tabula.ImportService copy
// them with the tables.
//
// What only an embedded engine knows is absent here: there is no Explain, no heat report, no
// fault injection, and a Page's Plan is the zero Plan (Kind tabula.PlanUnavailable). The
// service's table listing carries no creation time, so TableInfo.Created is zero.
package remote
